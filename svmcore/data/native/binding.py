"""The native library's functions with typed signatures: the one place that declares
them (ctypes ``argtypes``/``restype``) and the one place that passes numpy arrays to C.

Each wrapper takes numpy arrays, checks what C would otherwise trust (dtype, C order,
writable outputs, the lengths it indexes with) and raises a ``TypeError``/``ValueError``
naming the argument, so a wrong array is an error here rather than a crash or silent
garbage in C. Only numpy and ctypes are imported (the lean worker's floor).

The SGD weight-state layout (``SGD_STATE``) is defined here, beside the C that shares
it; the library is checked against it when it is loaded.
"""

from __future__ import annotations

import ctypes
import os
import weakref
from collections.abc import Sequence

import numpy as np

from svmcore.data.native import NativeBuildError, library_path

# One row per weight vector: the lazy weight scale, the intercept, the averaged model's
# a and b factors (averaged coef = (aw + a * w) / b) and the averaged intercept.
SGD_STATE = ("wscale", "intercept", "average_a", "average_b", "average_intercept")
WSCALE, INTERCEPT, AVERAGE_A, AVERAGE_B, AVERAGE_INTERCEPT = range(len(SGD_STATE))

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_D = ctypes.c_double
_INT = ctypes.c_int
_FIT = (_D, [_P, _P, _P, _I64, _P, _P, _P, _P, _I64, _I64, _D, _D, _D, _D, _INT])
_DECISION = (None, [_P, _P, _P, _I64, _P, _P, _I64, _I64, _P])
_DECISION_AVG = (None, [_P, _P, _P, _I64, _P, _P, _P, _P, _P, _I64, _I64, _P])
_FTRL_FIT = (None, [_P, _P, _P, _I64, _P, _P, _P, _P, _P, _I64, _I64, _D, _D, _D, _D])
_FTRL_DECISION = (None, [_P, _P, _P, _I64, _P, _P, _I64, _I64, _D, _D, _D, _D, _P, _P])
SIGNATURES = {
    "svm_set_pow5": (None, [_P]),
    "svm_count": (None, [_P, _I64, _P, _P]),
    "svm_count_newlines": (_I64, [_P, _I64]),
    "svm_find_newline": (_I64, [_P, _I64, _I64]),
    "svm_rfind_newline": (_I64, [_P, _I64, _I64]),
    "svm_scan": (_INT, [_P, _I64, _I64, _P, _P, _P, _P, _P]),
    "svm_write_rows": (_I64, [_P, _P, _P, _P, _P, _I64, _I64, _P, _I64]),
    "sgd_state_layout": (_I64, [_P]),
    # the SGD kernels, by the values' type (f64, f32) and the model state's (float64; _s32: float32)
    **{f"sgd_fold_scale{s}": (None, [_P, _P, _P, _I64, _I64, _INT]) for s in ("", "_s32")},
    **{f"{name}_{v}{s}": sig for name, sig in (("sgd_fit", _FIT), ("decision", _DECISION),
                                               ("decision_avg", _DECISION_AVG))
       for v in ("f64", "f32") for s in ("", "_s32")},
    **{f"ftrl_{name}_{v}": sig for name, sig in (("fit", _FTRL_FIT), ("decision", _FTRL_DECISION))
       for v in ("f64", "f32")},
    "ftrl_weights": (None, [_P, _P, _I64, _D, _D, _D, _D, _P]),
    "csr_gather": (None, [_P, _P, _P, _I64, _P, _I64, _P, _P, _P]),
    "csr_gather_parts": (None, [_P, _P, _P, _I64, _P, _P, _I64, _P, _P, _P]),
    "csr_parts_indptr": (_I64, [_P, _P, _P, _I64, _P]),
    "csr_move_front": (None, [_P, _P, _P, _I64, _P, _I64]),
    "spill_read_ranges": (_I64, [_I64, _I64, _P, _I64, _I64, _P, _P, _P, _I64]),
    "spill_read_entries": (_I64, [_I64, _P, _I64, _P]),
    "rng_state_width": (_I64, []),
    "rng_seed": (None, [_P, _I64, _P]),
    "rng_permutation": (None, [_P, _P, _I64]),
    "rng_shuffle_i32": (None, [_P, _P, _I64]),
}

_lib: ctypes.CDLL | None = None


def library() -> ctypes.CDLL:
    """The loaded library (built first if needed), every function typed. ctypes calls
    release the GIL."""
    global _lib
    if _lib is None:
        from svmcore.data.svmlight_lines import _power_of_five_table as power_of_five_table

        cdll = ctypes.CDLL(library_path(), use_errno=True)
        for name, (res, args) in SIGNATURES.items():
            fn = getattr(cdll, name)
            fn.restype = res
            fn.argtypes = args
        _check_layout(cdll)
        table = power_of_five_table()  # held while C copies it: an address alone keeps nothing alive
        cdll.svm_set_pow5(_in(table, np.uint64, "table"))
        _lib = cdll
    return _lib


def sgd_state_layout(cdll: ctypes.CDLL | None = None) -> tuple[tuple[int, ...], int]:
    """What the C library says the state layout is: the index of each ``SGD_STATE`` field and the row width."""
    cdll = cdll or library()
    fields = np.full(len(SGD_STATE), -1, np.int64)
    width = cdll.sgd_state_layout(_out(fields, np.int64, "fields"))
    return tuple(int(f) for f in fields), int(width)


def _check_layout(cdll: ctypes.CDLL) -> None:
    fields, width = sgd_state_layout(cdll)
    if fields != tuple(range(len(SGD_STATE))) or width != len(SGD_STATE):
        raise NativeBuildError(f"the native library's SGD state layout (fields {fields}, width {width}) is not "
                               f"binding.py's {SGD_STATE}")


# ------------------------------------------------------------------ argument checks
def _array(a, dtype, name: str) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy array, not {type(a).__name__}")
    if dtype is not None and a.dtype != dtype:
        raise TypeError(f"{name} must be {np.dtype(dtype).name}, not {a.dtype.name}")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous")
    return a


def _in(a, dtype, name: str) -> int:
    """The address of an input array, after the checks. The caller holds the array until C
    returns (a temporary would be freed as soon as its address is taken)."""
    return _array(a, dtype, name).ctypes.data


def _out(a, dtype, name: str) -> int:
    """The address of an array C writes to, after the checks (writable too)."""
    if not _array(a, dtype, name).flags.writeable:
        raise ValueError(f"{name} must be writable")
    return a.ctypes.data


def _at_least(a: np.ndarray, n: int, name: str) -> None:
    if a.shape[0] < n:
        raise ValueError(f"{name} has {a.shape[0]} entries, {n} are needed")


def _values(data) -> tuple[str, int]:
    """The suffix of the C function for these values (f64 or f32) and their address."""
    if isinstance(data, np.ndarray) and data.dtype == np.float32:
        return "f32", _in(data, np.float32, "data")
    return "f64", _in(data, np.float64, "data")


def _csr(data, indices, indptr) -> tuple[str, int, int, int, int]:
    """Checked CSR parts: (suffix, n_rows, data, indices and indptr addresses)."""
    suffix, d = _values(data)
    i, p = _in(indices, np.int32, "indices"), _in(indptr, np.int64, "indptr")
    if indptr.shape[0] < 1:
        raise ValueError("indptr needs at least one entry")
    n = indptr.shape[0] - 1
    if n and (indptr[-1] > data.shape[0] or indptr[-1] > indices.shape[0]):
        raise ValueError(f"indptr ends at {int(indptr[-1])}, beyond the {min(data.shape[0], indices.shape[0])} "
                         "values")
    return suffix, n, d, i, p


STATE_SUFFIX = {np.dtype(np.float64): "", np.dtype(np.float32): "_s32"}  # the kernels of each model state


def _state(w) -> str:
    """The suffix of the kernels for weights ``w`` (float64 or float32)."""
    suffix = STATE_SUFFIX.get(getattr(w, "dtype", None))
    if suffix is None:
        raise TypeError(f"the weights must be float64 or float32, not {getattr(w, 'dtype', type(w).__name__)}")
    return suffix


def _weights(w, aw, state, average: bool) -> tuple[int, int, int, int, int]:
    """Checked weight arrays, ``aw`` of ``w``'s type: (nvec, n_features, w, aw and state addresses)."""
    _state(w)
    if w.ndim != 2:
        raise ValueError(f"w must be (vectors, features), not of shape {w.shape}")
    nvec, nf = w.shape
    if state.shape != (nvec, len(SGD_STATE)):
        raise ValueError(f"state must be of shape {(nvec, len(SGD_STATE))}, not {state.shape}")
    if average and aw.shape != w.shape:
        raise ValueError(f"aw must be of w's shape {w.shape} when averaging, not {aw.shape}")
    return nvec, nf, _out(w, w.dtype, "w"), _out(aw, w.dtype, "aw"), _out(state, np.float64, "state")


# ------------------------------------------------------------------ SGD
def sgd_fit(data, indices, indptr, codes, w, aw, state, t: float, alpha: float, optimal_init: float,
            decay: float, average: bool) -> float:
    """One pass of hinge-loss SGD over CSR rows (class codes ``codes``), updating ``w``,
    ``aw`` and ``state`` in place; returns the step count after it. The caller checks the
    column indices against the width (a bound check per nonzero would slow the loop)."""
    suffix, n, d, i, p = _csr(data, indices, indptr)
    _at_least(codes, n, "codes")
    nvec, nf, wp, ap, sp = _weights(w, aw, state, average)
    fit = getattr(library(), f"sgd_fit_{suffix}{_state(w)}")
    return fit(d, i, p, n, _in(codes, np.int64, "codes"), wp, ap, sp, nvec, nf, t, alpha, optimal_init,
               decay, int(average))


class SGDFit:
    """``sgd_fit`` bound to one model's weight arrays, checked once (``sgd_fit`` checks them on
    every call). ``fit`` takes a batch as it is when its arrays are of the kernel's types
    (float64 or float32 values, int32 column ids, int64 indptr, integer codes; C-contiguous),
    after checking its bounds and its column ids (one pass over them), and returns None for any
    other batch, which the caller gives to ``sgd_fit`` (whose checks name the problem). Those
    checks (~35 µs a batch, a fifth of a 1,024-row batch's training) held the GIL from a reader
    thread: the lean path's later passes ran 4% faster without them (docs/lean.md)."""

    def __init__(self, w, aw, state, average: bool):
        # not held: a model that lets its average go (release_coef) frees it; a binding whose
        # arrays are gone is bound to none (bound_to), so their addresses are never used
        self._arrays = tuple(weakref.ref(a) for a in (w, aw, state))
        self._weights = _weights(w, aw, state, average)
        self._average = int(average)
        cdll, s = library(), _state(w)
        self._kernels = {np.dtype(np.float64): getattr(cdll, f"sgd_fit_f64{s}"),
                         np.dtype(np.float32): getattr(cdll, f"sgd_fit_f32{s}")}

    def bound_to(self, w, aw, state) -> bool:
        mine = self._arrays
        return mine[0]() is w and mine[1]() is aw and mine[2]() is state

    def fit(self, data, indices, indptr, codes, t: float, alpha: float, optimal_init: float, decay: float
            ) -> float | None:
        """One pass over the batch (``sgd_fit``), or None if it is not of the kernel's types."""
        kernel = self._kernels.get(getattr(data, "dtype", None))
        if (kernel is None or not isinstance(indices, np.ndarray) or not isinstance(indptr, np.ndarray)
                or not isinstance(codes, np.ndarray) or indices.dtype != np.int32 or indptr.dtype != np.int64
                or codes.dtype.kind not in "iu" or indptr.ndim != 1 or indptr.shape[0] < 2
                or codes.shape != (indptr.shape[0] - 1,)):
            return None
        if codes.dtype != np.int64:
            codes = codes.astype(np.int64)
        if not (data.flags.c_contiguous and indices.flags.c_contiguous and indptr.flags.c_contiguous
                and codes.flags.c_contiguous):
            return None
        nvec, nf, wp, ap, sp = self._weights
        end = int(indptr[-1])
        if end > data.shape[0] or end > indices.shape[0] or int(indptr[0]) < 0:
            return None
        if indices.shape[0] and int(indices.view(np.uint32).max()) >= nf:  # a negative id is a huge one here
            return None
        return kernel(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, indptr.shape[0] - 1,
                      codes.ctypes.data, wp, ap, sp, nvec, nf, t, alpha, optimal_init, decay, self._average)


def sgd_fold_scale(w, aw, state, average: bool) -> None:
    """Fold every vector's lazy scale and average factors into ``w`` and ``aw``."""
    nvec, nf, wp, ap, sp = _weights(w, aw, state, average)
    getattr(library(), f"sgd_fold_scale{_state(w)}")(wp, ap, sp, nvec, nf, int(average))


def decision(data, indices, indptr, coef, intercept, out) -> None:
    """``out[i, v] = X[i] . coef[v] + intercept[v]`` over CSR rows."""
    suffix, n, d, i, p = _csr(data, indices, indptr)
    nvec, nf = coef.shape
    if out.shape != (n, nvec) or intercept.shape != (nvec,):
        raise ValueError(f"out must be {(n, nvec)} and intercept {(nvec,)}, not {out.shape} and {intercept.shape}")
    getattr(library(), f"decision_{suffix}{_state(coef)}")(d, i, p, n, _in(coef, coef.dtype, "coef"),
                                             _in(intercept, np.float64, "intercept"), nvec, nf,
                                             _out(out, np.float64, "out"))


def decision_avg(data, indices, indptr, w, aw, a, b, intercept, out) -> None:
    """The averaged model's scores from its running sums, without its weights:
    ``out[i, v] = (X[i] . aw[v] + a[v] * X[i] . w[v]) / b[v] + intercept[v]``."""
    suffix, n, d, i, p = _csr(data, indices, indptr)
    nvec, nf = w.shape
    if aw.shape != w.shape or out.shape != (n, nvec) or not a.shape == b.shape == intercept.shape == (nvec,):
        raise ValueError(f"aw must be {w.shape}, out {(n, nvec)} and a, b, intercept {(nvec,)}")
    getattr(library(), f"decision_avg_{suffix}{_state(w)}")(
        d, i, p, n, _in(w, w.dtype, "w"), _in(aw, w.dtype, "aw"), _in(a, np.float64, "a"),
        _in(b, np.float64, "b"), _in(intercept, np.float64, "intercept"), nvec, nf, _out(out, np.float64, "out"))


# ------------------------------------------------------------------ FTRL
def ftrl_fit(data, indices, indptr, codes, z, n, zb, nb, l1: float, l2: float, alpha: float, beta: float) -> None:
    """One pass of FTRL-proximal over CSR rows (class codes ``codes``), updating ``z``, ``n``,
    ``zb`` and ``nb`` in place. The caller checks the column indices against the width."""
    suffix, rows, d, i, p = _csr(data, indices, indptr)
    _at_least(codes, rows, "codes")
    if z.ndim != 2 or n.shape != z.shape or zb.shape != (z.shape[0],) or nb.shape != zb.shape:
        raise ValueError(f"z and n must be (vectors, features) and zb, nb (vectors,), not {z.shape}, {n.shape}, "
                         f"{zb.shape} and {nb.shape}")
    state = (_out(a, np.float64, name) for a, name in ((z, "z"), (n, "n"), (zb, "zb"), (nb, "nb")))
    getattr(library(), f"ftrl_fit_{suffix}")(d, i, p, rows, _in(codes, np.int64, "codes"), *state, *z.shape,
                                             l1, l2, alpha, beta)


def ftrl_decision(data, indices, indptr, z, n, l1: float, l2: float, alpha: float, beta: float, intercept,
                  out) -> None:
    """``out[i, v] = X[i] . weights[v] + intercept[v]``, each weight computed from z and n."""
    suffix, rows, d, i, p = _csr(data, indices, indptr)
    if n.shape != z.shape or out.shape != (rows, z.shape[0]) or intercept.shape != (z.shape[0],):
        raise ValueError(f"n must be {z.shape}, out {(rows, z.shape[0])} and intercept {(z.shape[0],)}")
    getattr(library(), f"ftrl_decision_{suffix}")(d, i, p, rows, _in(z, np.float64, "z"), _in(n, np.float64, "n"),
                                                  *z.shape, l1, l2, alpha, beta,
                                                  _in(intercept, np.float64, "intercept"), _out(out, np.float64, "out"))


def ftrl_weights(z, n, l1: float, l2: float, alpha: float, beta: float, out) -> None:
    """The weights computed from z and n into ``out`` (of z's shape; z itself is allowed)."""
    if n.shape != z.shape or out.shape != z.shape:
        raise ValueError(f"n and out must be of z's shape {z.shape}, not {n.shape} and {out.shape}")
    library().ftrl_weights(_in(z, np.float64, "z"), _in(n, np.float64, "n"), z.size, l1, l2, alpha, beta,
                           _out(out, np.float64, "out"))


# ------------------------------------------------------------------ CSR rows
def gather_rows(data, indices, indptr, rows, take=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows ``rows`` of CSR parts, in that order, as new parts (indptr from 0). With ``take``
    (``take(name, n, dtype)`` -> an array of ``n`` items) they are written to the arrays it
    gives ("data", "indices", "indptr"), e.g. buffers reused from batch to batch."""
    rows, nnz = _rows_of(data, indices, indptr, rows)
    new = take or (lambda _, n, dtype: np.empty(n, dtype))
    out = new("data", nnz, data.dtype), new("indices", nnz, np.int32), new("indptr", rows.shape[0] + 1, np.int64)
    _csr_gather(data, indices, indptr, rows, *(a.ctypes.data for a in out))
    return out


def gather_rows_into(data, indices, indptr, rows, out_data, out_indices, out_indptr) -> int:
    """Rows ``rows`` of CSR parts, in that order, written to the front of ``out_data`` and
    ``out_indices`` (views into a bigger buffer, say), with ``out_indptr`` (len(rows) + 1)
    from 0; returns the nonzeros written."""
    rows, nnz = _rows_of(data, indices, indptr, rows)
    od = _out(out_data, data.dtype, "out_data")
    oi, op = _out(out_indices, np.int32, "out_indices"), _out(out_indptr, np.int64, "out_indptr")
    _at_least(out_data, nnz, "out_data")
    _at_least(out_indices, nnz, "out_indices")
    _at_least(out_indptr, rows.shape[0] + 1, "out_indptr")
    _csr_gather(data, indices, indptr, rows, od, oi, op)
    return nnz


def _rows_of(data, indices, indptr, rows) -> tuple[np.ndarray, int]:
    """The rows to gather, checked against CSR parts whose arrays are checked too, and their nonzeros."""
    _array(data, None, "data")
    _array(indices, np.int32, "indices")
    _array(indptr, np.int64, "indptr")
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if rows.shape[0] and (rows.min() < 0 or rows.max() >= indptr.shape[0] - 1):
        raise ValueError(f"rows must be in [0, {indptr.shape[0] - 1})")
    return rows, int((indptr[rows + 1] - indptr[rows]).sum())


def _csr_gather(data, indices, indptr, rows, out_data: int, out_indices: int, out_indptr: int) -> None:
    library().csr_gather(data.ctypes.data, indices.ctypes.data, indptr.ctypes.data, data.dtype.itemsize,
                         rows.ctypes.data, rows.shape[0], out_data, out_indices, out_indptr)


def move_front(data, indices, indptr, rows) -> None:
    """Rows ``rows`` (increasing) of CSR parts (indptr from 0) moved, in place and in that
    order, to rows 0, 1, ...; ``indptr[:len(rows) + 1]`` then describes them."""
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    address = _out(data, None, "data"), _out(indices, np.int32, "indices"), _out(indptr, np.int64, "indptr")
    if rows.shape[0] and (rows[0] < 0 or rows[-1] >= indptr.shape[0] - 1 or (np.diff(rows) <= 0).any()):
        raise ValueError(f"rows must be increasing and in [0, {indptr.shape[0] - 1})")
    if indptr[0] != 0:
        raise ValueError("indptr must start at 0")
    library().csr_move_front(*address, data.dtype.itemsize, rows.ctypes.data, rows.shape[0])


class PartsGather:
    """Rows of several CSR parts (each ``(data, indices, indptr from 0)``, one value dtype)
    gathered without stacking them. Holds the parts, so their addresses stay valid."""

    def __init__(self, parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]):
        if not parts:
            raise ValueError("at least one part is needed")
        self.parts = list(parts)
        self.dtype = self.parts[0][0].dtype
        for k, (d, i, p) in enumerate(self.parts):
            _array(d, self.dtype, f"data of part {k}")
            _array(i, np.int32, f"indices of part {k}")
            _array(p, np.int64, f"indptr of part {k}")
        self.rows = np.array([p[2].shape[0] - 1 for p in self.parts], np.int64)
        self._tables = [np.array([p[k].ctypes.data for p in self.parts], np.int64) for k in range(3)]

    def gather(self, part, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row ``rows[r]`` of part ``part[r]`` for each r, as new parts (indptr from 0)."""
        part = np.ascontiguousarray(part, dtype=np.int64)
        rows = np.ascontiguousarray(rows, dtype=np.int64)
        if part.shape != rows.shape:
            raise ValueError(f"{part.shape[0]} part numbers for {rows.shape[0]} rows")
        if part.shape[0] and (part.min() < 0 or part.max() >= len(self.parts)
                              or rows.min() < 0 or (rows >= self.rows[part]).any()):
            raise ValueError("a row is outside its part")
        lib = library()
        data_t, indices_t, indptr_t = (t.ctypes.data for t in self._tables)
        out_indptr = np.empty(rows.shape[0] + 1, np.int64)
        nnz = lib.csr_parts_indptr(indptr_t, part.ctypes.data, rows.ctypes.data, rows.shape[0],
                                   out_indptr.ctypes.data)
        out_data = np.empty(nnz, self.dtype)
        out_indices = np.empty(nnz, np.int32)
        lib.csr_gather_parts(data_t, indices_t, indptr_t, self.dtype.itemsize, part.ctypes.data, rows.ctypes.data,
                             rows.shape[0], out_data.ctypes.data, out_indices.ctypes.data, out_indptr.ctypes.data)
        return out_data, out_indices, out_indptr


# ------------------------------------------------------------------ the spill
def read_ranges(fds: Sequence[int], first, end, out_a, out_b) -> bool:
    """Pieces of two of the spill's files (``fds``: the values' and the column ids', or the row
    lengths' and the class codes') side by side: piece p is items ``first[p]:end[p]`` of
    each, written one piece after another into ``out_a`` and ``out_b``. False when a file is
    shorter than its pieces; OSError when a read fails."""
    first, end = _array(first, np.int64, "first"), _array(end, np.int64, "end")
    if first.shape != end.shape or first.ndim != 1:
        raise ValueError("first and end must be one entry a piece")
    if first.shape[0] and (first.min() < 0 or (end < first).any()):
        raise ValueError("pieces must start at 0 or later and end after they start")
    need = int((end - first).sum())
    a, b = _out(out_a, None, "out_a"), _out(out_b, None, "out_b")
    _at_least(out_a, need, "out_a")
    _at_least(out_b, need, "out_b")
    return _read_status(library().spill_read_ranges(int(fds[0]), out_a.itemsize, a, int(fds[1]), out_b.itemsize, b,
                                                    first.ctypes.data, end.ctypes.data, first.shape[0]))


def read_entries(fd: int, entries) -> np.ndarray | None:
    """Entries ``entries`` (int64 ids) of an index file of int64 entries, read by a positioned
    read of each run of consecutive entries. None when the file is shorter; OSError when a
    read fails."""
    entries = _array(entries, np.int64, "entries")
    if entries.ndim != 1 or (entries.shape[0] and entries.min() < 0):
        raise ValueError("entries must be a vector of ids from 0 up")
    out = np.empty(entries.shape[0], np.int64)
    return out if _read_status(library().spill_read_entries(int(fd), entries.ctypes.data, entries.shape[0],
                                                            out.ctypes.data)) else None


def _read_status(status: int) -> bool:
    """A spill read's status: True when done, False when a file was shorter than asked, OSError
    (errno's) when a read failed."""
    if status == -1:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return status == 0


# ------------------------------------------------------------------ seeded permutations
def _entropy_words(entropy) -> np.ndarray:
    """SeedSequence's entropy words: each non-negative int as 32-bit words, low first (0 is one word)."""
    words = []
    for v in ([entropy] if isinstance(entropy, int) else entropy):
        v = int(v)
        if v < 0:
            raise ValueError(f"seeds must be non-negative, not {v}")
        words.append(v & 0xFFFFFFFF)
        v >>= 32
        while v:
            words.append(v & 0xFFFFFFFF)
            v >>= 32
    return np.array(words, np.uint32)


class Generator:
    """``np.random.default_rng(entropy)`` (PCG64 seeded by a SeedSequence), as far as
    ``permutation(n)`` and ``shuffle`` of an int32 array: the same permutations, draw for
    draw, without numpy.random."""

    def __init__(self, entropy):
        self.state = np.zeros(library().rng_state_width(), np.uint64)
        words = _entropy_words(entropy)
        library().rng_seed(words.ctypes.data, words.shape[0], self.state.ctypes.data)

    def permutation(self, n) -> np.ndarray:
        n = int(n)
        if n < 0:
            raise ValueError(f"a permutation of {n} items")
        out = np.empty(n, np.int64)
        library().rng_permutation(self.state.ctypes.data, out.ctypes.data, n)
        return out

    def shuffle(self, a: np.ndarray) -> None:
        if a.dtype != np.int32 or a.ndim != 1 or not a.flags.c_contiguous or not a.flags.writeable:
            raise TypeError("Generator.shuffle takes a writable, contiguous 1-D int32 array")
        library().rng_shuffle_i32(self.state.ctypes.data, a.ctypes.data, a.shape[0])


# ------------------------------------------------------------------ svmlight text
def count_newlines(buf, n: int) -> int:
    """Newlines in ``buf[:n]`` (a uint8 array)."""
    _at_least(buf, n, "buf")
    return library().svm_count_newlines(_in(buf, np.uint8, "buf"), n)


def find_newline(buf, pos: int, n: int) -> int:
    """The first newline in ``buf[pos:n]``, or ``n``."""
    _at_least(buf, n, "buf")
    return library().svm_find_newline(_in(buf, np.uint8, "buf"), pos, n)


def rfind_newline(buf, lo: int, hi: int) -> int:
    """The last newline in ``buf[lo:hi]``, or -1."""
    _at_least(buf, hi, "buf")
    return library().svm_rfind_newline(_in(buf, np.uint8, "buf"), lo, hi)


def scan(buf, max_features: int, data, indices, indptr, y, state) -> int:
    """Parse svmlight lines of ``buf`` into the preallocated arrays from ``state`` (pos, nnz,
    rows, max_id, line_no, data_no, first_row_line; in and out) until the end or a line the
    C parser hands back; returns its status. The arrays must hold the upper bounds the
    caller computed from ``buf``'s length."""
    _at_least(state, 7, "state")
    return library().svm_scan(_in(buf, np.uint8, "buf"), buf.shape[0], max_features,
                              _out(data, np.float64, "data"), _out(indices, np.int32, "indices"),
                              _out(indptr, np.int64, "indptr"), _out(y, np.float64, "y"),
                              _out(state, np.int64, "state"))


def write_rows(data, indices, indptr, y_float, y_int, lo: int, hi: int, out) -> int:
    """Rows ``lo:hi`` as svmlight text into ``out`` (uint8); labels from ``y_float`` or,
    when it is None, ``y_int``. Returns the bytes written, -1 when ``out`` is too small."""
    _, _, d, i, p = _csr(data, indices, indptr)
    if data.dtype != np.float64:
        raise TypeError(f"data must be float64, not {data.dtype.name}")
    yf = None if y_float is None else _in(y_float, np.float64, "y_float")
    yi = None if y_int is None else _in(y_int, np.int64, "y_int")
    if yf is None and yi is None:
        raise ValueError("labels are needed (y_float or y_int)")
    return library().svm_write_rows(d, i, p, yf, yi, lo, hi, _out(out, np.uint8, "out"), out.shape[0])
