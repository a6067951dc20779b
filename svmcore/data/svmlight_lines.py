"""svmlight in plain Python, beside the C parser (``nativesvm``): the error it raises for a bad
line and its translation to a DataError that names the file line, the per-line path that parses
a line exactly as scikit-learn does (the lines the C grammar refuses), the cutting of a file into
blocks, and the powers-of-five table of the float conversion."""

from __future__ import annotations

import math
from typing import Callable, Iterator

import numpy as np

from svmcore.spec.config import shown
from svmcore.spec.errors import DataError
from svmcore.spec.knobs import MAX_FEATURES


class BlockError(ValueError):
    """An invalid line in a block: its 0-based physical line in the block (``line_index``: empty
    and comment lines count) and among its data lines (``data_line_index``), its bytes without
    ``\\r\\n``, its byte ``offset`` in the block and a short ``reason``; ``data_error`` names the
    file line."""

    def __init__(self, line_index: int, data_line_index: int, line: bytes, offset: int, reason: str):
        self.line_index = line_index
        self.data_line_index = data_line_index
        self.line = line
        self.offset = offset
        self.reason = reason
        super().__init__(f"line {line_index} of the block: {reason}")

    def data_error(self, path: str, first_line: int) -> DataError:
        """The error for the user: why the line is wrong, at its 1-based file line
        (``first_line`` is the file line of the block's first line)."""
        why = explain_svmlight_line(self.line) or f"is not valid svmlight ({self.reason})"
        return DataError(why, path, first_line + self.line_index)


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


def explain_svmlight_line(line: bytes) -> str | None:
    """Why one svmlight line is invalid, or None if it is fine."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"is not valid UTF-8 text (byte {e.start})"
    text = text.split("#", 1)[0].strip()
    parts = text.split()
    if not parts:
        return None
    label = parts[0]
    if ":" in label:
        return f"starts with {shown(label)}; each line must start with a label, then id:value pairs"
    try:
        lv = float(label)
    except ValueError:
        if "," in label or ";" in label:
            return "uses ',' or ';' as separator; svmlight separates fields with spaces"
        return f"label {shown(label)} is not a number"
    if not math.isfinite(lv):
        return f"label {shown(label)} is not finite"
    prev = 0
    for tok in parts[1:]:
        if tok.startswith("qid:"):
            continue
        idx, sep, val = tok.partition(":")
        if not sep:
            hint = " (wrong separator?)" if any(c in tok for c in ",;=") else ""
            return f"{shown(tok)} is not an id:value pair{hint}"
        try:
            fid = int(idx)
        except ValueError:
            return f"feature id {shown(idx)} is not a whole number"
        if fid <= 0:
            return f"feature id {fid} is not allowed; ids start at 1"
        if fid > MAX_FEATURES:
            return f"declares feature {fid:,}, above the limit of {MAX_FEATURES:,} features"
        if fid <= prev:
            return f"feature ids must increase along a line; {fid} comes after {prev}"
        prev = fid
        why = why_not_a_number(val, f"value {shown(val)} of feature {fid}")
        if why:
            return why
    return None


def why_not_a_number(text: str, what: str) -> str | None:
    """Why ``text`` (called ``what`` in the message) is not a finite number, or None."""
    try:
        v = float(text)
    except ValueError:
        return f"{what} is not a number"
    if not math.isfinite(v):
        return f"{what} is NaN or infinite"
    return None


# ---------------------------------------------------------------- a file in blocks

def iter_blocks(path: str, block_bytes: int, rfind_newline: Callable[[np.ndarray, int, int], int],
                count_newlines: Callable[[np.ndarray, int], int], reuse: bool | dict = False,
                span: tuple[int, int | None, int] | None = None) -> Iterator[tuple[memoryview, int]]:
    """Yield ``(block, first_line)``: read-only blocks of about ``block_bytes`` bytes cut just
    after a newline (a longer line makes a bigger block; the last may lack its newline), and
    the 1-based file line of each block's first line; a UTF-8 byte order mark is skipped.
    ``rfind_newline(arr, lo, hi)`` and ``count_newlines(arr, hi)`` find the newlines (the native library's or numpy's).
    Each block has its own buffer, or with ``reuse`` all share one (valid until the next
    block: a fresh buffer faulted in page by page was most of a first pass's read), which a
    dict keeps for the next call too. ``span`` ``(start, end, first_line)``: bytes [start,
    end) only (``end`` None: to the end), ``start`` being where file line ``first_line`` starts.
    """
    if block_bytes < 1:
        raise ValueError("block_bytes must be positive")
    first, last, line_no = span or (0, None, 1)
    left = None if last is None else last - first
    carry = np.empty(0, dtype=np.uint8)
    kept = reuse if isinstance(reuse, dict) else {}
    with open(path, "rb", buffering=0) as f:
        f.seek(first)
        if first == 0 and f.read(3) != b"\xef\xbb\xbf":
            f.seek(0)
        while True:
            # a fresh buffer per block (np.empty: no zero-fill), so yielded views stay valid; or one, reused
            size = max(block_bytes, 2 * carry.shape[0])
            buf = kept.get("buf")
            if not reuse or buf is None or buf.shape[0] < size:
                buf = kept["buf"] = np.empty(size, dtype=np.uint8)
            arr = buf[:size]
            start = carry.shape[0]
            arr[:start] = carry
            end = start
            mv = memoryview(arr)
            while end < size and left != 0:
                got = f.readinto(mv[end:end + (size - end if left is None else min(size - end, left))])
                if not got:
                    break
                end += got
                left = None if left is None else left - got
            eof = end < size
            cut = rfind_newline(arr, start, end)  # the carry never holds a newline
            if cut < 0 and not eof:
                carry = arr[:end]  # one line longer than the block: read more
                continue
            if cut < 0:  # end of file, no newline left
                if end:
                    yield mv[:end].toreadonly(), line_no
                return
            carry = arr[cut + 1:end].copy()
            yield mv[:cut + 1].toreadonly(), line_no
            line_no += count_newlines(arr, cut + 1)
            if eof:
                if carry.shape[0]:
                    yield memoryview(carry).toreadonly(), line_no
                return
