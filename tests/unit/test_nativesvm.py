"""What only the C parser (nativesvm) does: numbers with more than 19 significant
digits go through the C library's strtod, never the per-line Python path. The cases
it shares with scikit-learn are in test_svmlight_parsers.py."""

from __future__ import annotations

from svmcore.data import nativesvm


def test_long_mantissas_stay_in_c():
    halfway = b"9007199254740993.000000000000000000000001"
    before = dict(nativesvm.stats)
    data, _, _, y, *_ = nativesvm.parse_block(b"1 1:" + halfway + b" 2:" + b"1" * 30 + b"\n" + halfway + b"\n", 2)
    assert data.tolist() == [float(halfway), float(b"1" * 30)] and y.tolist() == [1.0, float(halfway)]
    assert nativesvm.stats == before


def test_blocks_parsed_into_scratch_arrays_are_their_own(tmp_path):
    """``scratch``: every block is parsed into the same arrays and copied out at its size. Kept
    together, the blocks equal those parsed into fresh arrays (a block left as a view of the
    scratch arrays would be overwritten by the next), and none holds more than its rows."""
    import numpy as np

    from svmcore.data.files import make_dataset

    path = str(tmp_path / "d.svm")
    make_dataset("sparse-text", rows=6000, features=3000, nnz_per_row=15, seed=4, out=path)
    fresh = list(nativesvm.iter_parsed_blocks(path, 3000, block_bytes=64 * 1024))
    kept = list(nativesvm.iter_parsed_blocks(path, 3000, block_bytes=64 * 1024, scratch=True))
    assert len(fresh) == len(kept) > 3
    for a, b in zip(fresh, kept):
        for name in ("data", "indices", "indptr", "y"):
            x, z = getattr(a, name), getattr(b, name)
            assert np.array_equal(x, z), name
            assert z.base is None, name
        assert (a.n_rows, a.max_id, a.first_line, a.first_row_line) == (b.n_rows, b.max_id, b.first_line,
                                                                         b.first_row_line)
