"""The native (C) svmlight parser: the same API and results as ``fastsvm`` (the numba
parser) without numba, LLVM or scipy in the process.

``parse_block`` returns the same arrays as ``fastsvm.parse_block`` and raises the same
:class:`BlockError` for the same lines; ``iter_svmlight_blocks`` and
``iter_parsed_blocks`` are the same code (``svmlight_lines``) over the C kernels.
The grammar and the float conversion (Eisel-Lemire with the same table) are fastsvm's, ported to C (svmcore/data/native/svmlight.c); numbers
with more than 19 significant digits go through the C library's correctly rounded
``strtod`` instead of a per-line Python path. Lines the strict grammar refuses take
the same per-line Python path as fastsvm (``svmlight_lines.parse_line_python``).
The C calls release the GIL, so a reader thread parses while another trains.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from svmcore.data.native import binding
from svmcore.data.svmlight_lines import (Block, BlockError, ParsedBlock, block_input, iter_blocks, iter_parsed,
                                         scan_block)

__all__ = ["BlockError", "parse_block", "iter_svmlight_blocks", "iter_parsed_blocks", "ParsedBlock",
           "warm_up", "DEFAULT_BLOCK_BYTES", "stats", "write_rows"]

DEFAULT_BLOCK_BYTES = 2**20  # ~1,000 rows of text-like data: small next to the model

stats = {"python_lines": 0}


def _parse(buf, max_features: int, scratch: dict | None = None) -> Block:
    arr, max_features = block_input(buf, max_features)
    n = arr.shape[0]
    # Upper bounds instead of a counting pass (which cost as much as the parse): a pair takes at
    # least 4 bytes ("1:1 "), a row at least 2 ("1\n"). np.empty does not touch the pages, so
    # only what is written counts in RSS; the arrays are trimmed to size at the end.
    nnz_cap = n // 2 + 2
    row_cap = n // 2 + 2
    if scratch is None:
        data = np.empty(nnz_cap, dtype=np.float64)
        indices = np.empty(nnz_cap, dtype=np.int32)
        indptr = np.empty(row_cap + 1, dtype=np.int64)
        y = np.empty(row_cap, dtype=np.float64)
    else:
        data, indices, indptr, y = (_scratch(scratch, k, cap, dtype) for k, cap, dtype in (
            ("data", nnz_cap, np.float64), ("indices", nnz_cap, np.int32), ("indptr", row_cap + 1, np.int64),
            ("y", row_cap, np.float64)))
    indptr[0] = 0
    # pos, nnz, rows, max_id, line_no, data_no, first_row_line
    state = np.empty(7, dtype=np.int64)

    def scan(at):
        state[:] = at
        st = binding.scan(arr, max_features, data, indices, indptr, y, state)
        return st, tuple(int(v) for v in state)

    _, nnz, rows, max_id, line_no, _, first_row_line = scan_block(
        arr, max_features, (data, indices, indptr, y), scan, lambda pos: binding.find_newline(arr, pos, n), stats)
    data, indices, y, indptr = data[:nnz], indices[:nnz], y[:rows], indptr[:rows + 1]
    if scratch is not None:  # the block's own arrays, of its size
        data, indices, y, indptr = data.copy(), indices.copy(), y.copy(), indptr.copy()
    # else views, not copies: the pages past the end were never written, so they hold no memory
    return Block(data, indices, indptr, y, rows, max_id, first_row_line, line_no)


def _scratch(scratch: dict, key: str, n: int, dtype) -> np.ndarray:
    a = scratch.get(key)
    if a is None or a.shape[0] < n:
        a = scratch[key] = np.empty(n, dtype)
    return a[:n]


def parse_block(buf: bytes | memoryview | np.ndarray, max_features: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """``(data float64, indices int32 (file id - 1), indptr int64, y float64, n_rows,
    max_id)`` of a block of complete svmlight lines, as ``fastsvm.parse_block``."""
    r = _parse(buf, max_features)
    return r.data, r.indices, r.indptr, r.y, r.n_rows, r.max_id


def warm_up() -> None:
    """Load (building it first if needed) the library."""
    parse_block(b"1 qid:1 1:0.5 3:1e-3 # c\n\n-1 2:-.5e+2\n", 4)


def iter_svmlight_blocks(path: str, block_bytes: int = DEFAULT_BLOCK_BYTES
                         ) -> Iterator[tuple[memoryview, int]]:
    """``(block, first_line)`` as ``fastsvm.iter_svmlight_blocks``: blocks cut after a
    newline, each in its own buffer, with the 1-based file line of its first line."""
    return iter_blocks(path, block_bytes, binding.rfind_newline, binding.count_newlines)


def iter_parsed_blocks(path: str, max_features: int, block_bytes: int = DEFAULT_BLOCK_BYTES, scratch: bool = False,
                       span: tuple | None = None, buffers: dict | None = None) -> Iterator[ParsedBlock]:
    """``parse_block`` over ``iter_svmlight_blocks``; blocks with no rows are skipped.
    A bad line raises :class:`DataError` naming its file line. With ``scratch`` every block
    is parsed into the same arrays (sized for the densest block) and copied out at its size,
    instead of into fresh arrays of that size, mapped and unmapped a block at a time: on a
    reader thread each map and unmap also stalled the training thread's page faults (the
    lean path's first pass with 2 threads ran 15-20% faster, for about 1 MiB of peak).
    ``span``: a part of the file (``svmlight_lines.iter_blocks``); ``buffers``: a dict that
    keeps the text buffer and the scratch arrays for the next call (a first pass that reads
    the file in pieces)."""
    kept = {} if buffers is None else buffers
    blocks = iter_blocks(path, block_bytes, binding.rfind_newline, binding.count_newlines, reuse=kept, span=span)
    into = kept.setdefault("scratch", {}) if scratch else None
    return iter_parsed(path, blocks, lambda b: _parse(b, max_features, into))  # each block parsed before the next read


def write_rows(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, y: np.ndarray) -> memoryview:
    """CSR rows as ``sklearn.datasets.dump_svmlight_file(X, y, f, zero_based=False)``
    writes them, byte for byte ("%.16g" values; "%d" labels when ``y`` is integer). A view
    of the written part of the buffer, not a copy: only its written pages are resident."""
    data = np.ascontiguousarray(data, dtype=np.float64)
    indices = np.ascontiguousarray(indices, dtype=np.int32)
    indptr = np.ascontiguousarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    if y.dtype.kind in "iub":
        yf, yi = None, np.ascontiguousarray(y, dtype=np.int64)
    else:
        yf, yi = np.ascontiguousarray(y, dtype=np.float64), None
    cap = 64 * n + 48 * int(indptr[-1] - indptr[0]) + 64
    out = np.empty(cap, dtype=np.uint8)
    got = binding.write_rows(data, indices, indptr, yf, yi, 0, n, out)
    if got < 0:
        raise RuntimeError("svmlight writer: output buffer too small")
    return memoryview(out)[:got]
