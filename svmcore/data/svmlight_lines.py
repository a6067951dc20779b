"""What both compiled svmlight parsers (numba: fastsvm; C: native) share, in plain
Python: the error they raise for a bad line, the per-line path that parses a line
exactly as scikit-learn does, and the powers-of-five table of the float conversion."""

from __future__ import annotations

import math

import numpy as np


class BlockError(ValueError):
    """An invalid line in a block.

    ``line_index``: 0-based physical line index within the block (every ``\\n``
    counts, including empty and comment lines). ``data_line_index``: 0-based index
    among the block's data lines (lines that are not empty and not comment-only).
    ``line``: the raw bytes of the line without its ``\\r\\n``, ready for
    ``explain_svmlight_line``. ``offset``: byte offset of the line in the block.
    ``reason``: a short description. ``line_number``: the 1-based file line, set by
    ``iter_parsed_blocks`` (None from ``parse_block``).
    """

    def __init__(self, line_index: int, data_line_index: int, line: bytes, offset: int, reason: str):
        self.line_index = line_index
        self.data_line_index = data_line_index
        self.line = line
        self.offset = offset
        self.reason = reason
        self.line_number: int | None = None
        super().__init__(f"line {line_index} of the block: {reason}")


_SMALLEST_POW10 = -342
_LARGEST_POW10 = 308


def _power_of_five_table() -> np.ndarray:
    """5**q for q in [-342, 308] as 128-bit numbers (hi, lo), the top bit set;
    positive powers truncated, negative powers as reciprocals rounded up."""
    out = np.empty(2 * (_LARGEST_POW10 - _SMALLEST_POW10 + 1), dtype=np.uint64)
    mask = (1 << 64) - 1
    for k, q in enumerate(range(_SMALLEST_POW10, _LARGEST_POW10 + 1)):
        if q >= 0:
            v = 5**q
            shift = v.bit_length() - 128
            v = v >> shift if shift > 0 else v << -shift
        else:
            p = 5**-q
            z = (p - 1).bit_length()  # smallest z with 2**z >= p
            b = z + 127 if q >= -27 else 2 * z + 128
            v = 2**b // p + 1
            while v >= 1 << 128:
                v >>= 1
        out[2 * k] = v >> 64
        out[2 * k + 1] = v & mask
    return out


def parse_line_python(line: bytes, max_features: int) -> tuple[float, list[int], list[float]] | None:
    """One line exactly as sklearn's loader reads it (``float()``/``int()`` on the
    tokens), plus our checks. None for an empty/comment line; ValueError if invalid."""
    hash_at = line.find(b"#")
    nul_at = line.find(b"\x00")
    if hash_at >= 0 and (nul_at < 0 or hash_at < nul_at):  # sklearn uses strchr()
        line = line[:hash_at]
    parts = line.split()
    if not parts:
        return None
    label = float(parts[0])
    if not math.isfinite(label):
        raise ValueError(f"label {parts[0]!r} is not finite")
    feats = parts[1:]
    if feats and feats[0].startswith(b"qid"):
        feats[0].split(b":", 1)[1]  # IndexError if there is no ':' (sklearn: ValueError)
        feats = feats[1:]
    ids: list[int] = []
    vals: list[float] = []
    prev = 0
    for tok in feats:
        idx_s, sep, val_s = tok.partition(b":")
        if not sep:
            raise ValueError(f"{tok!r} is not an id:value pair")
        fid = int(idx_s)
        if fid <= 0:
            raise ValueError(f"feature id {fid} is not allowed; ids start at 1")
        if fid > max_features:
            raise ValueError(f"declares feature {fid:,}, above the limit of {max_features:,} features")
        if fid <= prev:
            raise ValueError(f"feature ids must increase along a line; {fid} comes after {prev}")
        v = float(val_s)
        if not math.isfinite(v):
            raise ValueError(f"value {val_s!r} of feature {fid} is NaN or infinite")
        ids.append(fid)
        vals.append(v)
        prev = fid
    return label, ids, vals
