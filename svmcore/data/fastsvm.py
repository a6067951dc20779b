"""A compiled svmlight/libsvm block parser (numba), identical to sklearn on valid input.

``parse_block`` turns a block of complete svmlight lines into CSR arrays in one pass
of compiled code; ``iter_svmlight_blocks`` cuts a file into such blocks. On valid
input the output equals ``sklearn.datasets.load_svmlight_file(..., zero_based=False)``
bit for bit (same rows, same float64 values, same labels); on an invalid line
``parse_block`` raises :class:`BlockError` naming that line, and
``iter_parsed_blocks`` a DataError naming its file line and what is wrong with it.
What is not compiled (the per-line Python path, the block loop, the file cutting)
is shared with the C parser in ``svmlight_lines``.

Grammar of a line (the compiled fast path)::

    [ws] label [ws qid:ANY] {ws id:value} [ws] [# comment] ("\\n" | end of block)

* ws is any run of space, TAB, CR, VT, FF (so ``\\r\\n`` endings work); empty and
  comment-only lines are skipped; ``#`` starts a comment anywhere on a line.
* label and value: ``[+-] (digits [. digits] | . digits) [(e|E) [+-] digits]``;
  NaN, inf, and numbers that overflow float64 are refused.
* id: decimal digits, 1 <= id <= ``max_features``, strictly increasing along a line.

Floats are converted with the Eisel-Lemire algorithm (128-bit truncated powers of
five; correctly rounded, the same result as Python's ``float()`` which sklearn
uses). Numbers with more than 19 significant digits are truncated to 19 digits and
converted twice (w and w+1); if the two disagree, that one line takes the Python
path (``svmlight_lines.parse_line_python``, which does exactly what sklearn's loop does). The same
per-line Python path handles the rare lines the strict grammar refuses but Python
accepts (``1_000``, ``+3:1``, non-ASCII Unicode spaces, ...); everything else stays
compiled. No whole block ever falls back.

Memory: a first compiled pass counts ``:`` and ``\\n`` bytes, which bounds nnz and
rows, so allocations are O(block size) and never O(largest id); ids above
``max_features`` are refused before they are used for anything.

numba cache: ``@njit(cache=True, nogil=True)`` with numba's own locator chain,
unchanged: ``$NUMBA_CACHE_DIR`` if the environment sets it, else
``svmcore/__pycache__`` when the package directory is writable (git-ignored), else
the user-wide ``~/.cache/numba``. If no location is usable, the functions are
compiled uncached (each process then pays the compile, ~3-6 s on a busy 2-core
box) instead of failing at import. A cached first call costs ~0.3-0.7 s. We never
set ``NUMBA_CACHE_DIR`` ourselves: it is process-global and read when numba is
imported.

Threads: the compiled functions release the GIL, so blocks can be parsed by a
thread pool. Memory: importing numba costs ~65 MiB of RSS over numpy, the first
call (loading LLVM and the cached code) ~60 MiB more; in a process that already
imported sklearn the two together add ~100 MiB to the floor once cached (~150 MiB in the process
that compiles them first). See bench/parse_speed.py and docs/measurement.md.
"""

from __future__ import annotations

from typing import Iterator

import numba
import numpy as np

__all__ = ["BlockError", "parse_block", "iter_svmlight_blocks", "iter_parsed_blocks", "ParsedBlock",
           "to_csr", "warm_up", "DEFAULT_BLOCK_BYTES", "stats"]

DEFAULT_BLOCK_BYTES = 8 * 2**20

# status codes of the compiled scanner
_OK = 0          # = svmlight_lines.OK
_INVALID = 1      # the strict grammar refuses the line
_NONFINITE = 2    # a number overflows float64
_SLOW = 3         # >19 significant digits and truncation makes the rounding ambiguous

# Counters of how often the per-line Python path ran (for benchmarks and tests).
stats = {"python_lines": 0, "slow_lines": 0}


# ---------------------------------------------------------------- jit with a graceful cache

def _jit(fn):
    try:
        return numba.njit(cache=True, nogil=True)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return numba.njit(cache=False, nogil=True)(fn)


# ---------------------------------------------------------------- powers of five (Eisel-Lemire)

from svmcore.data.svmlight_lines import (  # noqa: E402
    _LARGEST_POW10,
    _SMALLEST_POW10,
    Block,
    BlockError,
    ParsedBlock,
    _power_of_five_table,
    block_input,
    read_only_bytes,
    iter_blocks,
    iter_parsed,
    scan_block,
)

_POW5 = _power_of_five_table()

_U0 = np.uint64(0)
_U1 = np.uint64(1)
_U3 = np.uint64(3)
_U10 = np.uint64(10)
_U32 = np.uint64(32)
_U52 = np.uint64(52)
_U63 = np.uint64(63)
_M32 = np.uint64(0xFFFFFFFF)
_HIDDEN = np.uint64(1 << 52)
_TWO53 = np.uint64(1 << 53)
_NOT_HIDDEN = np.uint64(~(1 << 52) & (2**64 - 1))
_NOT_ONE = np.uint64(2**64 - 2)
_PRECISION_MASK = np.uint64(0x1FF)  # 2**64-1 >> (52 + 3)


# Indexing with an unsigned index spares numba's negative-index wraparound on every access.
_ix = np.uint64


@_jit
def _mul128(a, b):
    """(hi, lo) of the 128-bit product of two uint64."""
    a_lo = a & _M32
    a_hi = a >> _U32
    b_lo = b & _M32
    b_hi = b >> _U32
    p_ll = a_lo * b_lo
    p_lh = a_lo * b_hi
    p_hl = a_hi * b_lo
    p_hh = a_hi * b_hi
    mid = (p_ll >> _U32) + (p_lh & _M32) + (p_hl & _M32)
    lo = (p_ll & _M32) | (mid << _U32)
    hi = p_hh + (p_lh >> _U32) + (p_hl >> _U32) + (mid >> _U32)
    return hi, lo


@_jit
def _leading_zeros(w):
    n = 0
    for shift in (32, 16, 8, 4, 2, 1):  # a binary search over the top bits
        if w >> np.uint64(64 - shift) == _U0:
            n += shift
            w = w << np.uint64(shift)
    return n


@_jit
def _eisel_lemire(q, w):
    """Correctly rounded w * 10**q (w > 0) as (52-bit mantissa, biased exponent);
    exponent 2047 means overflow to infinity. Reads the global table ``_POW5``
    (numba freezes it into the compiled code)."""
    if q < _SMALLEST_POW10:
        return _U0, 0
    if q > _LARGEST_POW10:
        return _U0, 2047
    lz = _leading_zeros(w)
    w = w << np.uint64(lz)
    idx = 2 * (q - _SMALLEST_POW10)
    hi, lo = _mul128(w, _POW5[_ix(idx)])
    if (hi & _PRECISION_MASK) == _PRECISION_MASK:
        hi2, lo2 = _mul128(w, _POW5[_ix(idx + 1)])
        lo = lo + hi2
        if hi2 > lo:
            hi = hi + _U1
    upperbit = np.int64(hi >> _U63)
    shift = np.uint64(upperbit + 9)
    mant = hi >> shift
    power2 = ((217706 * q) >> 16) + 63 + upperbit - lz + 1023
    if power2 <= 0:  # subnormal
        if -power2 + 1 >= 64:
            return _U0, 0
        mant = mant >> np.uint64(-power2 + 1)
        mant = mant + (mant & _U1)
        mant = mant >> _U1
        if mant < _HIDDEN:
            return mant, 0
        return mant & _NOT_HIDDEN, 1
    if lo <= _U1 and q >= -4 and q <= 23 and (mant & _U3) == _U1:
        if (mant << shift) == hi:
            mant = mant & _NOT_ONE
    mant = mant + (mant & _U1)
    mant = mant >> _U1
    if mant >= _TWO53:
        mant = _HIDDEN
        power2 += 1
    mant = mant & _NOT_HIDDEN
    if power2 >= 2047:
        return _U0, 2047
    return mant, power2


@_jit
def _to_bits(neg, w, exp10):
    """(status, float64 bits) of (-1)**neg * w * 10**exp10, w < 2**64 exact."""
    sign = np.uint64(1 << 63) if neg else _U0
    if w == _U0:
        return _OK, sign
    mant, p2 = _eisel_lemire(exp10, w)
    if p2 >= 2047:
        return _NONFINITE, _U0
    return _OK, mant | (np.uint64(p2) << _U52) | sign


@_jit
def _is_ws(c):
    return c == 32 or c == 9 or c == 13 or c == 11 or c == 12


@_jit
def _is_end(c):
    """A byte that may follow a number: whitespace, newline or comment."""
    return c == 32 or c == 10 or c == 9 or c == 13 or c == 35 or c == 11 or c == 12


@_jit
def _eight_digits(v):
    """Whether the eight bytes of v are all ASCII digits."""
    return (((v + np.uint64(0x4646464646464646)) | (v - np.uint64(0x3030303030303030)))
            & np.uint64(0x8080808080808080)) == _U0


@_jit
def _parse8(v):
    """The value of eight ASCII digits (first digit in the lowest byte)."""
    v = v - np.uint64(0x3030303030303030)
    v = v * _U10 + (v >> np.uint64(8))
    m = np.uint64(0x000000FF000000FF)
    return ((v & m) * np.uint64(0x000F424000000064)
            + ((v >> np.uint64(16)) & m) * np.uint64(0x0000271000000001)) >> _U32


@_jit
def _parse_number_careful(buf, pos, n):
    """Parse one float at buf[pos:] with any number of digits (beyond 19 significant
    digits the mantissa is truncated). Returns (status, new_pos, float64 bits)."""
    neg = False
    if pos < n:
        c = buf[_ix(pos)]
        if c == 45:  # '-'
            neg = True
            pos += 1
        elif c == 43:  # '+'
            pos += 1
    w = _U0
    ndig = 0          # significant digits kept in w
    exp10 = 0
    dropped = False   # a nonzero digit beyond the 19th
    nseen = 0         # mantissa digits seen
    while pos < n:
        d = np.int64(buf[_ix(pos)]) - 48
        if d < 0 or d > 9:
            break
        nseen += 1
        if ndig < 19:
            if w != _U0 or d != 0:
                w = w * _U10 + np.uint64(d)
                ndig += 1
        else:
            exp10 += 1
            if d != 0:
                dropped = True
        pos += 1
    if pos < n and buf[_ix(pos)] == 46:  # '.'
        pos += 1
        while pos < n:
            d = np.int64(buf[_ix(pos)]) - 48
            if d < 0 or d > 9:
                break
            nseen += 1
            if ndig < 19:
                if w != _U0 or d != 0:
                    w = w * _U10 + np.uint64(d)
                    ndig += 1
                exp10 -= 1
            elif d != 0:
                dropped = True
            pos += 1
    if nseen == 0:
        return _INVALID, pos, _U0
    if pos < n and (buf[_ix(pos)] == 101 or buf[_ix(pos)] == 69):  # 'e' 'E'
        st, pos, e = _exponent(buf, pos + 1, n)
        if st != _OK:
            return st, pos, _U0
        exp10 += e
    if pos < n and not _is_end(buf[_ix(pos)]):
        return _INVALID, pos, _U0
    st, bits = _to_bits(neg, w, exp10)
    if st == _OK and dropped and w != _U0:
        # truncated to 19 digits: the true value lies in (w, w+1) * 10**exp10
        st2, bits2 = _to_bits(neg, w + _U1, exp10)
        if st2 != st or bits2 != bits:
            return _SLOW, pos, _U0
    return st, pos, bits


@_jit
def _exponent(buf, pos, n):
    """The exponent after an 'e'/'E' at buf[pos-1]: (status, new_pos, signed value)."""
    eneg = False
    if pos < n and (buf[_ix(pos)] == 45 or buf[_ix(pos)] == 43):
        eneg = buf[_ix(pos)] == 45
        pos += 1
    e = 0
    ne = 0
    while pos < n:
        d = np.int64(buf[_ix(pos)]) - 48
        if d < 0 or d > 9:
            break
        if e < 100000:
            e = e * 10 + d
        ne += 1
        pos += 1
    if ne == 0:
        return _INVALID, pos, 0
    return _OK, pos, -e if eneg else e


@_jit
def _skip_blank_lines(buf, pos, n, line_no):
    """From the start of a line, past empty and comment-only lines: (start of the
    data line, its first non-blank byte, line_no); both positions n at the end."""
    while pos < n:
        line_start = pos
        c = buf[_ix(pos)]
        while _is_ws(c):
            pos += 1
            if pos == n:
                return pos, pos, line_no
            c = buf[_ix(pos)]
        if c == 10:
            pos += 1
            line_no += 1
        elif c == 35:
            while pos < n and buf[_ix(pos)] != 10:
                pos += 1
            if pos < n:
                pos += 1
                line_no += 1
        else:
            return line_start, pos, line_no
    return pos, pos, line_no


@_jit
def _skip_qid(buf, pos, n):
    """Past whitespace and a "qid:ANY" token at buf[pos:] (right after the label)."""
    while pos < n and _is_ws(buf[_ix(pos)]):
        pos += 1
    if (pos + 3 < n and buf[_ix(pos)] == 113 and buf[_ix(pos + 1)] == 105
            and buf[_ix(pos + 2)] == 100 and buf[_ix(pos + 3)] == 58):
        while pos < n and not _is_end(buf[_ix(pos)]):
            pos += 1
    return pos


@_jit
def _load8(buf, pos):
    """Eight bytes from buf[pos:] as a little-endian uint64 (LLVM fuses the loads)."""
    return (np.uint64(buf[_ix(pos)]) | (np.uint64(buf[_ix(pos + 1)]) << np.uint64(8))
            | (np.uint64(buf[_ix(pos + 2)]) << np.uint64(16)) | (np.uint64(buf[_ix(pos + 3)]) << np.uint64(24))
            | (np.uint64(buf[_ix(pos + 4)]) << np.uint64(32)) | (np.uint64(buf[_ix(pos + 5)]) << np.uint64(40))
            | (np.uint64(buf[_ix(pos + 6)]) << np.uint64(48)) | (np.uint64(buf[_ix(pos + 7)]) << np.uint64(56)))


@_jit
def _count(buf):
    """Number of ':' and '\\n' bytes."""
    colons = 0
    newlines = 0
    for i in range(buf.shape[0]):
        c = buf[_ix(i)]
        if c == 58:
            colons += 1
        elif c == 10:
            newlines += 1
    return colons, newlines


@_jit
def _find_newline(buf, pos):
    """Index of the first '\\n' at or after pos, or len(buf)."""
    n = buf.shape[0]
    while pos < n and buf[_ix(pos)] != 10:
        pos += 1
    return pos


@_jit
def _rfind_newline(buf, lo, hi):
    """Index of the last '\\n' in buf[lo:hi], or -1."""
    i = hi - 1
    while i >= lo:
        if buf[_ix(i)] == 10:
            return i
        i -= 1
    return -1


@_jit
def _parse_line(buf, pos, n, max_features, data_bits, indices, nnz):
    """One data line from its label at buf[pos:]: the values go to data_bits/indices
    from nnz on. Returns (status, pos at the line's end, new nnz, label bits, last id).

    The number parser is written out once, inline, for the label and every value:
    numba's own inlining (inline="always") made the cold compile ~3x slower, and a
    call per number measured 5-15% slower."""
    k = nnz
    fid = 0  # 0 while the number is the label
    prev = 0
    label = _U0
    while True:
        # ---- one number, [+-] digits [. digits] [(e|E) [+-] digits]; > 19 digits: careful
        start = pos
        neg = False
        c = buf[_ix(pos)] if pos < n else 0
        if c == 45 or c == 43:  # '-' '+'
            neg = c == 45
            pos += 1
        digits_start = pos
        while pos < n and buf[_ix(pos)] == 48:  # leading zeros
            pos += 1
        sig_start = pos
        w = _U0
        while pos < n:
            d = np.int64(buf[_ix(pos)]) - 48
            if d < 0 or d > 9:
                break
            w = w * _U10 + np.uint64(d)
            pos += 1
        nsig = pos - sig_start
        nseen = pos - digits_start
        exp10 = 0
        if pos < n and buf[_ix(pos)] == 46:  # '.'
            pos += 1
            frac_start = pos
            if nsig == 0:
                while pos < n and buf[_ix(pos)] == 48:
                    pos += 1
            frac_sig = pos
            while pos + 8 <= n:  # eight digits at a time
                v8 = _load8(buf, pos)
                if not _eight_digits(v8):
                    break
                w = w * np.uint64(100000000) + _parse8(v8)
                pos += 8
            while pos < n:
                d = np.int64(buf[_ix(pos)]) - 48
                if d < 0 or d > 9:
                    break
                w = w * _U10 + np.uint64(d)
                pos += 1
            nsig += pos - frac_sig
            nseen += pos - frac_start
            exp10 = frac_start - pos
        st = _OK if nseen else _INVALID
        v = _U0
        if nsig > 19:
            st, pos, v = _parse_number_careful(buf, start, n)
        elif st == _OK:
            if pos < n and (buf[_ix(pos)] == 101 or buf[_ix(pos)] == 69):  # 'e' 'E'
                st, pos, e = _exponent(buf, pos + 1, n)
                exp10 += e
            if st == _OK and pos < n and not _is_end(buf[_ix(pos)]):
                st = _INVALID
            if st == _OK:
                st, v = _to_bits(neg, w, exp10)
        if st != _OK:
            return st, pos, k, label, prev
        # ---- the number is the label or the value of feature fid
        if fid == 0:
            label = v
            pos = _skip_qid(buf, pos, n)
        else:
            data_bits[_ix(k)] = v
            indices[_ix(k)] = fid - 1
            k += 1
            prev = fid
        # ---- the next id (at most 10 digits here; longer ones take the Python path), or the end
        while pos < n and _is_ws(buf[_ix(pos)]):
            pos += 1
        if pos < n and buf[_ix(pos)] == 35:  # a comment to the end of the line
            pos = _find_newline(buf, pos)
        if pos >= n or buf[_ix(pos)] == 10:
            break
        fid = 0
        nd = 0
        while pos < n:
            d = np.int64(buf[_ix(pos)]) - 48
            if d < 0 or d > 9:
                break
            fid = fid * 10 + d
            nd += 1
            pos += 1
        if nd == 0 or nd > 10 or fid <= 0 or fid > max_features or fid <= prev or pos >= n or buf[_ix(pos)] != 58:
            return _INVALID, pos, k, label, prev
        pos += 1
    return _OK, pos, k, label, prev


@_jit
def _scan(buf, max_features, data_bits, indices, indptr, y_bits,
          pos, nnz, rows, max_id, line_no, data_no, first_row_line):
    """Parse lines from buf[pos:] into the arrays until the end or a line that needs
    attention. Returns (status, pos, nnz, rows, max_id, line_no, data_no, first_row_line);
    on a non-OK status, pos is the start of that line and the counters exclude it."""
    n = buf.shape[0]
    while True:
        line_start, pos, line_no = _skip_blank_lines(buf, pos, n, line_no)
        if pos >= n:
            return _OK, pos, nnz, rows, max_id, line_no, data_no, first_row_line
        st, pos, k, label, prev = _parse_line(buf, pos, n, max_features, data_bits, indices, nnz)
        if st != _OK:
            return st, line_start, nnz, rows, max_id, line_no, data_no, first_row_line
        if prev > max_id:
            max_id = prev
        if rows == 0 and first_row_line < 0:
            first_row_line = line_no
        y_bits[_ix(rows)] = label
        rows += 1
        nnz = k
        indptr[_ix(rows)] = nnz
        data_no += 1
        if pos < n:  # at the '\n'
            pos += 1
            line_no += 1


# ---------------------------------------------------------------- public API

def _parse(buf, max_features: int) -> Block:
    arr, max_features = block_input(buf, max_features)
    n = arr.shape[0]
    colons, newlines = _count(arr)
    row_cap = newlines + (1 if n and arr[n - 1] != 10 else 0)
    data = np.empty(colons, dtype=np.float64)
    indices = np.empty(colons, dtype=np.int32)
    indptr = np.empty(row_cap + 1, dtype=np.int64)
    indptr[0] = 0
    y = np.empty(row_cap, dtype=np.float64)
    data_bits = data.view(np.uint64)
    y_bits = y.view(np.uint64)

    def scan(state):
        r = _scan(arr, max_features, data_bits, indices, indptr, y_bits, *state)
        if r[0] == _SLOW:
            stats["slow_lines"] += 1
        return r[0], r[1:]

    _, nnz, rows, max_id, line_no, _, first_row_line = scan_block(
        arr, max_features, (data, indices, indptr, y), scan, lambda pos: _find_newline(arr, pos), stats)
    if nnz != data.shape[0]:
        data = data[:nnz].copy()
        indices = indices[:nnz].copy()
    if rows != y.shape[0]:
        y = y[:rows].copy()
        indptr = indptr[:rows + 1].copy()
    return Block(data, indices, indptr, y, rows, max_id, first_row_line, line_no)


def parse_block(buf: bytes | memoryview | np.ndarray, max_features: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]:
    """Parse a block of complete svmlight lines (ending at a newline or at the end).

    Returns ``(data float64, indices int32 (file id - 1), indptr int64, y float64,
    n_rows, max_id)``; ``max_id`` is the largest 1-based id seen (0 if none), so the
    block's width is ``max_id`` columns. Raises :class:`BlockError` at the first
    invalid line (its ``line_index`` is the physical line within the block).
    Identical to ``load_svmlight_file(..., zero_based=False)`` on valid input,
    explicit zeros and -0.0 included. The first call in a process compiles or loads
    the numba cache (see :func:`warm_up`). Releases the GIL while parsing.
    """
    r = _parse(buf, max_features)
    return r.data, r.indices, r.indptr, r.y, r.n_rows, r.max_id


def warm_up() -> None:
    """Compile (or load from numba's cache) everything the parser uses: ~3-6 s on
    the first run after an install or an edit of this file, ~0.3-0.7 s cached."""
    parse_block(b"1 qid:1 1:0.5 3:1e-3 # c\n\n-1 2:-.5e+2\n", 4)
    ro = read_only_bytes(b"\n")
    _rfind_newline(ro, 0, 1)
    _find_newline(ro, 0)


def _rfind(arr: np.ndarray, lo: int, hi: int) -> int:
    return _rfind_newline(read_only_bytes(arr), lo, hi)  # read-only view: parse_block's specialisation


def _newlines(arr: np.ndarray, hi: int) -> int:
    return _count(read_only_bytes(arr)[:hi])[1]


def iter_svmlight_blocks(path: str, block_bytes: int = DEFAULT_BLOCK_BYTES
                         ) -> Iterator[tuple[memoryview, int]]:
    """``(block, first_line)``: the file cut into blocks of about ``block_bytes``
    just after a newline, each in its own buffer, with the 1-based file line of its
    first line (see ``svmlight_lines.iter_blocks``)."""
    return iter_blocks(path, block_bytes, _rfind, _newlines)


def iter_parsed_blocks(path: str, max_features: int, block_bytes: int = DEFAULT_BLOCK_BYTES,
                       span: tuple | None = None) -> Iterator[ParsedBlock]:
    """``parse_block`` over ``iter_svmlight_blocks`` (of ``span`` only, if given); blocks with
    no rows are skipped. A bad line raises :class:`DataError` naming its file line."""
    blocks = iter_blocks(path, block_bytes, _rfind, _newlines, reuse=True, span=span)
    return iter_parsed(path, blocks, lambda b: _parse(b, max_features))  # each block parsed before the next read


def to_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, n_rows: int, n_features: int):
    """A scipy CSR matrix over the arrays (no copy), keeping int32 indices and
    int64 indptr (scipy's constructor would otherwise pick one dtype for both)."""
    import scipy.sparse as sp

    X = sp.csr_matrix((data, indices, indptr), shape=(n_rows, n_features), copy=False)
    X.indices = indices
    X.indptr = indptr
    return X
