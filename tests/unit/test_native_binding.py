"""The native binding: the C library shares the Python SGD state layout, and its wrappers
refuse arrays C would misread, naming the argument."""

import errno
import os

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data.native import binding


def test_the_c_library_uses_the_python_sgd_state_layout():
    fields, width = binding.sgd_state_layout()
    assert fields == (binding.WSCALE, binding.INTERCEPT, binding.AVERAGE_A, binding.AVERAGE_B,
                      binding.AVERAGE_INTERCEPT) == tuple(range(len(binding.SGD_STATE)))
    assert width == len(binding.SGD_STATE)


def test_every_declared_function_is_in_the_library():
    lib = binding.library()
    for name, (res, args) in binding.SIGNATURES.items():
        assert getattr(lib, name).argtypes == args and getattr(lib, name).restype == res


def _sgd_args(**change):
    args = dict(data=np.ones(2), indices=np.array([0, 1], np.int32), indptr=np.array([0, 1, 2], np.int64),
                codes=np.array([0, 1], np.int64), w=np.zeros((1, 3)), aw=np.zeros((1, 3)), state=np.ones((1, 5)),
                t=1.0, alpha=1e-4, optimal_init=1.0, decay=0.01, average=True)
    args.update(change)
    return args


@pytest.mark.parametrize(("change", "error", "words"), [
    (dict(indices=np.array([0, 1], np.int64)), TypeError, "indices must be int32, not int64"),
    (dict(data=np.ones(2, np.int64)), TypeError, "data must be float64, not int64"),
    (dict(w=np.zeros((1, 6))[:, ::2]), ValueError, "w must be C-contiguous"),
    (dict(codes=np.array([0], np.int64)), ValueError, "codes has 1 entries, 2 are needed"),
    (dict(state=np.ones((1, 4))), ValueError, "state must be of shape (1, 5)"),
    (dict(aw=np.zeros((1, 1))), ValueError, "aw must be of w's shape"),
    (dict(indptr=np.array([0, 1, 9], np.int64)), ValueError, "indptr ends at 9"),
    (dict(data=[1.0, 1.0]), TypeError, "data must be a numpy array, not list"),
])
def test_sgd_fit_refuses_arrays_c_would_misread(change, error, words):
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        binding.sgd_fit(**_sgd_args(**change))


def test_a_read_only_output_is_refused():
    w = np.zeros((1, 3))
    w.flags.writeable = False
    with pytest.raises(ValueError, match="w must be writable"):
        binding.sgd_fit(**_sgd_args(w=w))


def test_gathers_are_scipy_s_row_selection():
    X = sp.random(50, 30, density=0.2, format="csr", random_state=1, dtype=np.float32)
    p = (X.data, X.indices, X.indptr.astype(np.int64))
    rows = np.array([7, 0, 49, 7, 13])
    want = X[rows]
    for data, indices, indptr in (binding.gather_rows(*p, rows),):
        got = sp.csr_matrix((data, indices, indptr), shape=(rows.shape[0], 30))
        np.testing.assert_array_equal(got.toarray(), want.toarray())
    halves = [(X[:20].data, X[:20].indices, X[:20].indptr.astype(np.int64)),
              (X[20:].data, X[20:].indices, X[20:].indptr.astype(np.int64))]
    part = (rows >= 20).astype(np.int64)
    got = sp.csr_matrix(binding.PartsGather(halves).gather(part, rows - 20 * part), shape=(rows.shape[0], 30))
    np.testing.assert_array_equal(got.toarray(), want.toarray())
    with pytest.raises(ValueError, match="outside its part"):
        binding.PartsGather(halves).gather(np.array([0]), np.array([20]))
    with pytest.raises(ValueError, match=r"rows must be in \[0, 50\)"):
        binding.gather_rows(*p, np.array([50]))


def _spill_files(tmp_path, rows=300, seed=0):
    """Four spill-like files (values, column ids, row lengths, codes) and their arrays."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, rows).astype(np.int32)
    nnz = int(lengths.sum())
    arrays = {"data": rng.random(nnz), "indices": rng.integers(0, 1000, nnz).astype(np.int32),
              "lengths": lengths, "codes": rng.integers(0, 3, rows).astype(np.int32)}
    for name, a in arrays.items():
        a.tofile(tmp_path / f"{name}.bin")
    starts = np.concatenate([[0], np.cumsum(lengths)])
    return arrays, starts


def test_read_ranges_reads_each_piece_into_its_place(tmp_path):
    """A window's pieces of two spill files side by side: values and column ids from the
    nonzeros' ranges, row lengths and class codes from the rows'."""
    arrays, starts = _spill_files(tmp_path)
    pieces = [(250, 300), (0, 7), (40, 41), (100, 164), (7, 7)]  # any order, a one-row and an empty piece
    r0, r1 = (np.array(p, np.int64) for p in zip(*pieces))
    z0, z1 = starts[r0].astype(np.int64), starts[r1].astype(np.int64)
    rows, nnz = int((r1 - r0).sum()), int((z1 - z0).sum())
    out = (np.full(nnz + 3, -1.0), np.full(nnz, -1, np.int32), np.full(rows, -1, np.int32),
           np.full(rows, -1, np.int32))
    fds = [os.open(tmp_path / f"{n}.bin", os.O_RDONLY) for n in ("data", "indices", "lengths", "codes")]
    try:
        assert binding.read_ranges(fds[:2], z0, z1, out[0], out[1])
        assert binding.read_ranges(fds[2:], r0, r1, out[2], out[3])
        want_z = np.concatenate([np.arange(a, b) for a, b in zip(z0, z1)])
        want_r = np.concatenate([np.arange(a, b) for a, b in zip(r0, r1)])
        np.testing.assert_array_equal(out[0][:nnz], arrays["data"][want_z])
        assert (out[0][nnz:] == -1.0).all()  # nothing written past the pieces
        np.testing.assert_array_equal(out[1], arrays["indices"][want_z])
        np.testing.assert_array_equal(out[2], arrays["lengths"][want_r])
        np.testing.assert_array_equal(out[3], arrays["codes"][want_r])
        # a piece past the end of the files: False (the spill says "shorter than written")
        assert not binding.read_ranges(fds[:2], z0[:1], z1[:1] + 50, np.empty(nnz + 50), np.empty(nnz + 50, np.int32))
        assert not binding.read_ranges(fds[2:], r0[:1], r1[:1] + 5, np.empty(rows + 5, np.int32),
                                       np.empty(rows + 5, np.int32))
        with pytest.raises(ValueError, match="out_b has"):  # an output shorter than its pieces
            binding.read_ranges(fds[2:], r0, r1, out[2], out[3][:-1])
        with pytest.raises(ValueError, match="end after they start"):
            binding.read_ranges(fds[2:], r1, r0, out[2], out[3])
    finally:
        for fd in fds:
            os.close(fd)
    with pytest.raises(OSError) as e:  # closed files: the kernel's error, not garbage
        binding.read_ranges(fds[:2], z0, z1, out[0], out[1])
    assert e.value.errno == errno.EBADF


@pytest.mark.parametrize("entropy", [0, 7, [0], [1, 2, 0], [3, 0, 0], [2**32 - 1], [2**32], [2**63 + 5, 1],
                                     [1, 2, 3, 4, 5, 6], [123456789012345678901234567890, 3]])
def test_the_native_generator_draws_numpy_s_permutations(entropy):
    """binding.Generator is np.random.default_rng's twin as far as permutation goes: the same
    permutations, one after another from one generator (its state carried between calls),
    for one-word, multi-word and longer-than-the-pool entropy."""
    ours, numpy_s = binding.Generator(entropy), np.random.default_rng(entropy)
    for n in (0, 1, 2, 3, 10, 1000, 65536, 100_003):
        np.testing.assert_array_equal(ours.permutation(n), numpy_s.permutation(n))
    with pytest.raises(ValueError, match="non-negative"):
        binding.Generator([1, -2])


def test_the_native_generator_shuffles_int32_arrays_as_numpy_does():
    """shuffle (int32, in place) swaps as numpy's does, draw for draw, between permutations
    from the same generator; shuffle_order's int32 piece order is numpy's permutation."""
    from svmcore.data.shuffle_order import permutation32

    ours, numpy_s = binding.Generator(11), np.random.default_rng(11)
    for n in (0, 1, 2, 10, 1000, 100_003):
        a = np.arange(n, dtype=np.int32)[::-1].copy()
        b = a.copy()
        ours.shuffle(a)
        numpy_s.shuffle(b)
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(ours.permutation(n), numpy_s.permutation(n))
    for rng in (binding.Generator(5), np.random.default_rng(5)):
        order = permutation32(70_000, rng)
        assert order.dtype == np.int32
        np.testing.assert_array_equal(order, np.random.default_rng(5).permutation(70_000))
    for bad in (np.arange(5), np.arange(10, dtype=np.int32)[::2], np.zeros((2, 2), np.int32)):
        with pytest.raises(TypeError, match="int32"):
            ours.shuffle(bad)


def test_move_front_moves_increasing_rows_in_place_and_refuses_others():
    X = sp.random(200, 40, density=0.2, format="csr", random_state=3)
    data, indices, indptr = X.data.copy(), X.indices.astype(np.int32), X.indptr.astype(np.int64)
    keep = np.array([0, 3, 4, 5, 90, 91, 150, 199])  # some in place, some far
    binding.move_front(data, indices, indptr, keep)
    moved = sp.csr_matrix((data[:indptr[8]], indices[:indptr[8]], indptr[:9]), shape=(8, 40))
    np.testing.assert_array_equal(moved.toarray(), X[keep].toarray())
    with pytest.raises(ValueError, match="increasing"):
        binding.move_front(data, indices, indptr, np.array([5, 3]))
