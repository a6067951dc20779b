"""Shuffling training rows: every epoch a permutation of the rows, drawn from (seed, epoch),
holding no more than the mode promises."""

from __future__ import annotations

import os

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import dump_svmlight_file

from svmcore.data.feeds.memory import InMemory
from svmcore.data.native import binding
from svmcore.data.rows import COMPUTE_DTYPES, Dense, Parts, Rows, pool_shuffle, rebatch
from svmcore.data.shuffle_order import Shuffle, block_windows, order_bytes, piece_rows
from svmcore.data.spill import Spill
from svmcore.predict.model import Shape, parts
from svmcore.spec.config import validate
from tests.helpers import parts_of, stream_feed
from tests.unit.test_batches import STORAGE_CASES, source_matrix, stored, to_dense


def _ids(batches) -> np.ndarray:
    return np.concatenate([yb for _, yb in batches])


def ArrayData(X, codes, precision: str = "float64", shuffle: Shuffle | None = None) -> InMemory:
    """The in-memory feed over ``X`` (a block, a CSR matrix, or mapped CSR arrays) with ``codes``
    (here each row's id, or its label as a code)."""
    if sp.issparse(X):
        X = parts_of(X)
    elif isinstance(X, tuple):
        X = Parts(*X)
    codes = codes if isinstance(codes, np.memmap) else np.asarray(codes).astype(np.int64)
    return InMemory(X, codes, COMPUTE_DTYPES[precision], shuffle)


def _written(X, y, size):
    """A CSR matrix's rows and their codes as ``Rows`` of ``size`` rows."""
    return iter([Rows(parts_of(X[s:s + size]), y[s:s + size]) for s in range(0, X.shape[0], size)])


def _memmapped(tmp_path, X: sp.csr_matrix, y: np.ndarray):
    parts = []
    for name, arr in (("data", X.data), ("indices", X.indices.astype(np.int32)), ("indptr", X.indptr.astype(np.int64)),
                      ("y", y)):
        path = str(tmp_path / name)
        arr.tofile(path)
        parts.append(np.memmap(path, dtype=arr.dtype, mode="r", shape=arr.shape))
    return tuple(parts[:3]), parts[3]


@pytest.mark.parametrize("storage,precision", STORAGE_CASES)
@pytest.mark.parametrize("batch_size", [1, 64, 1000])
def test_in_memory_epochs_are_permutations_with_rows_intact(storage, precision, batch_size):
    X = source_matrix(1000)
    y = np.arange(1000.0)
    data = ArrayData(stored(X, storage, precision), y, precision, Shuffle(seed=3, window_rows=100))
    ref = ArrayData(stored(X, storage, precision), y, precision)
    orders = []
    for epoch in range(2):
        batches = list(data.batches(batch_size, epoch))
        ids = _ids(batches)
        assert sorted(ids.tolist()) == list(range(1000))  # every row once
        got = np.vstack([to_dense(b[0]) for b in batches])
        want = np.vstack([to_dense(ref.X.slice(int(i), int(i) + 1)) for i in ids])
        np.testing.assert_array_equal(got, want)  # each row's values travel with its label
        orders.append(ids)
    assert not np.array_equal(orders[0], orders[1])  # a new order every epoch
    assert not np.array_equal(orders[0], np.arange(1000.0))


def test_same_seed_same_order_other_seed_other_order():
    X = source_matrix(500)
    y = np.arange(500.0)

    def order(seed, epoch):
        return _ids(ArrayData(X, y, "float64", Shuffle(seed, 64)).batches(50, epoch))

    np.testing.assert_array_equal(order(1, 2), order(1, 2))
    assert not np.array_equal(order(1, 2), order(2, 2))


def test_no_shuffle_keeps_file_order():
    X = source_matrix(300)
    y = np.arange(300.0)
    assert _ids(ArrayData(X, y).batches(64)).tolist() == list(range(300))


@pytest.mark.parametrize("n,block,window", [(1000, 64, 256), (1000, 100, 50), (7, 3, 100), (1, 1, 1)])
def test_block_windows_cover_every_row_once_and_keep_blocks_whole(n, block, window):
    rng = np.random.default_rng(0)
    seen = []
    for spans in block_windows(n, block, window, rng):
        assert len(spans) <= max(1, window // block)
        assert all(b - a == block for a, b in spans if b < n)
        seen += [r for a, b in spans for r in range(a, b)]
    assert sorted(seen) == list(range(n))


def test_memmapped_rows_are_shuffled_window_by_window(tmp_path):
    X = source_matrix(2000)
    y = np.arange(2000, dtype=np.int32)
    parts, ym = _memmapped(tmp_path, X, y)
    data = ArrayData(parts, ym, "float64", Shuffle(seed=0, window_rows=256))
    batches = list(data.batches(64))
    ids = _ids(batches)
    assert sorted(ids.tolist()) == list(range(2000))
    assert not np.array_equal(ids, np.arange(2000))
    # a window of 256 rows holds 4 blocks of 64: each group of 4 batches draws on at most 4 blocks
    for w in range(0, len(batches), 4):
        blocks = {int(i) // 64 for _, yb in batches[w:w + 4] for i in yb}
        assert len(blocks) <= 4
    got = np.vstack([to_dense(b[0]) for b in batches])
    np.testing.assert_array_equal(got, X.toarray()[ids])


def test_pool_shuffle_is_a_permutation_within_reach():
    n, pool = 5000, 500
    y = np.arange(n)
    X = Dense((y + 1).reshape(-1, 1).astype(float)).sparse()
    chunks = [Rows(X.slice(s, s + 100), y[s:s + 100]) for s in range(0, n, 100)]
    out = list(pool_shuffle(iter(chunks), pool, np.random.default_rng(0), 100))
    ids = np.concatenate([c[1] for c in out])
    assert sorted(ids.tolist()) == list(range(n))
    np.testing.assert_array_equal(np.concatenate([c[0].data for c in out]), ids + 1)  # rows stay paired
    # bounded: a row leaves the pool no earlier than about a pool's reach before it is read
    position = np.empty(n, int)
    position[ids] = np.arange(n)
    assert (position - np.arange(n)).min() >= -(pool + 100)
    assert not np.array_equal(ids, y)


def test_pool_shuffle_holds_at_most_a_pool_and_a_chunk():
    read = []

    def chunks():
        for s in range(0, 10_000, 100):
            read.append(s + 100)
            yield Rows(Parts(np.ones(100), np.zeros(100, np.int32), np.arange(101)), np.arange(s, s + 100))

    emitted = 0
    for X, y in pool_shuffle(chunks(), 1000, np.random.default_rng(1), 100):
        emitted += y.shape[0]
        assert read[-1] - emitted <= 1000 + 100  # rows read but not yet given out


def _spill_with(tmp_path, n=3000, batch=100):
    X = source_matrix(n)
    y = np.arange(n)  # each row its own label: ids in the output
    spill = Spill(str(tmp_path / "spill"), np.float32)
    list(spill.write_through(_written(X, y, batch)))
    return X, y, spill


def test_spill_read_in_windows_is_a_permutation_of_the_rows(tmp_path):
    X, y, spill = _spill_with(tmp_path)
    batches = list(spill.read_windows(128, 1024, np.random.default_rng(5)))
    assert all(b[0].n_rows <= 128 for b in batches)
    got = np.vstack([b[0].dense(40) for b in batches])
    ids = _ids(batches)
    assert sorted(ids.tolist()) == list(range(X.shape[0]))
    assert ids.tolist() != list(range(X.shape[0]))
    np.testing.assert_array_equal(got, X.astype(np.float32).toarray()[ids])
    again = list(spill.read_windows(128, 1024, np.random.default_rng(5)))
    np.testing.assert_array_equal(np.vstack([b[0].dense(40) for b in again]), got)


def test_spill_windows_come_in_the_order_drawn_for_them(tmp_path):
    """The pieces' order is drawn first, then one row order a window, window after window: the
    next window is planned while this one's batches go out, and that must not move a draw."""
    X, y, spill = _spill_with(tmp_path, n=3000)
    got = _ids(list(spill.read_windows(128, 1024, np.random.default_rng(5))))
    rng, prow = np.random.default_rng(5), piece_rows(1024)
    order, per, want = rng.permutation(-(-3000 // prow)), 1024 // prow, []
    for w in range(0, order.shape[0], per):
        rows = np.concatenate([np.arange(p * prow, min(3000, (p + 1) * prow)) for p in np.sort(order[w:w + per])])
        want.extend(rows[rng.permutation(rows.shape[0])].tolist())
    assert got.tolist() == want


def test_spill_windows_kept_after_later_windows_are_read_still_hold_their_own_rows(tmp_path):
    """A pass refills one window's arrays for every window: its batches (gathered CSR parts and
    class codes, without ``into``) must be copies, whole after the windows after them are read."""
    X, y, spill = _spill_with(tmp_path)
    batches = list(spill.read_windows(128, 1024, np.random.default_rng(5)))  # 3 windows, all kept
    ids = np.concatenate([codes for _, codes in batches])
    assert sorted(ids.tolist()) == list(range(X.shape[0]))
    dense = X.astype(np.float32).toarray()
    for (data, indices, indptr), codes in batches:
        got = sp.csr_matrix((data, indices, indptr), shape=(codes.shape[0], X.shape[1])).toarray()
        np.testing.assert_array_equal(got, dense[codes])


def test_stream_shuffles_the_text_pass_and_the_spill_passes(tmp_path):
    n = 2000
    X = source_matrix(n, cols=30)
    X = sp.hstack([X, sp.csr_matrix(np.arange(1.0, n + 1).reshape(-1, 1))]).tocsr()  # a row id column
    y = np.arange(n) % 2
    path = tmp_path / "d.svm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    cfg = validate(dataset=str(path), mode="stream")
    spill = Spill(str(tmp_path / "spill"), np.float64)
    data = stream_feed(cfg, n, spill, Shuffle(seed=0, window_rows=256), hold_out=False)
    orders = []
    for epoch in range(3):
        # a shuffled batch lives in buffers later batches reuse: each is read while it is the current one
        batches = [(b.X.dense(31), b.codes) for b in data.batches(100, epoch)]
        rows = np.vstack([b[0] for b in batches])
        ids = (rows[:, -1] - 1).astype(int).tolist()
        np.testing.assert_array_equal(rows, X.toarray()[ids])
        np.testing.assert_array_equal(_ids(batches), y[ids])
        assert sorted(ids) == list(range(n))
        orders.append(ids)
    assert spill.complete
    assert orders[0] != list(range(n)) and orders[1] != orders[2]


def test_label_sorted_rows_come_out_mixed_in_every_scheme(tmp_path):
    """The case that motivated shuffling: 3% positives in one block near the top. Over
    ten epochs, the last quarter of each epoch sees its share of positives."""
    n = 20_000
    y = np.where((np.arange(n) >= 200) & (np.arange(n) < 800), 1.0, -1.0)
    X = sp.csr_matrix(np.ones((n, 1)))
    shuffle = Shuffle(seed=0, window_rows=2048)

    def last_quarter_positive_share(epochs):
        return float(np.mean([np.mean(_ids(b)[-n // 4:] > 0) for b in epochs]))

    plain = ArrayData(X, y)
    assert last_quarter_positive_share(plain.batches(256, e) for e in range(10)) == 0.0
    memory = ArrayData(X, y, "float64", shuffle)
    assert last_quarter_positive_share(memory.batches(256, e) for e in range(10)) > 0.02
    parts, ym = _memmapped(tmp_path, X, y)
    memmap = ArrayData(parts, ym, "float64", shuffle)
    assert last_quarter_positive_share(memmap.batches(256, e) for e in range(10)) > 0.01
    chunks = rebatch(_written(X, y, 1000), 256)
    spill = Spill(str(tmp_path / "spill"), np.float64)
    list(spill.write_through(chunks))
    assert last_quarter_positive_share(spill.read_windows(256, 2048, shuffle.rng(e)) for e in range(10)) > 0.01


def _tenths(ids: np.ndarray, n: int) -> set:
    return {int(i) * 10 // n for i in ids}


def test_the_first_window_of_epoch_2_draws_from_the_whole_spill(tmp_path):
    """Blocks as written (1,000 rows) would give a 2,048-row window two stretches of the file;
    pieces of 64 rows picked across the file give it every tenth."""
    n = 20_000
    X = sp.csr_matrix(np.ones((n, 1)))
    y = np.arange(n)
    spill = Spill(str(tmp_path / "spill"), np.float32)
    list(spill.write_through(_written(X, y, 1000)))
    shuffle = Shuffle(seed=0, window_rows=2048)
    assert piece_rows(2048) == 64
    batches = list(spill.read_windows(256, shuffle.window_rows, shuffle.rng(1)))
    first = _ids(batches[:8])  # the first window: 2,048 rows
    assert first.shape[0] == 2048
    assert len({int(i) // 64 for i in first}) == 32  # 32 whole pieces of 64 rows
    assert len(_tenths(first, n)) >= 8  # two 1,000-row blocks would reach 2 (all 10: 66% of draws)
    assert sorted(_ids(batches).tolist()) == list(range(n))


def test_the_first_memmap_window_draws_from_the_whole_map(tmp_path):
    n = 20_000
    X = sp.csr_matrix(np.ones((n, 1)))
    y = np.arange(n, dtype=np.int32)
    parts, ym = _memmapped(tmp_path, X, y)
    data = ArrayData(parts, ym, "float64", Shuffle(seed=0, window_rows=2048))
    batches = list(data.batches(1024, epoch=1))
    first = _ids(batches[:2])
    assert len(_tenths(first, n)) >= 8  # two 1,024-row blocks would reach 2
    assert sorted(_ids(batches).tolist()) == list(range(n))


def test_spill_pieces_keep_rows_intact_across_odd_batches_and_float16(tmp_path):
    """Pieces start every 64 rows whatever the written batch sizes (here 37 and 100)."""
    X = source_matrix(1500, cols=30)
    y = np.arange(1500)
    spill = Spill(str(tmp_path / "spill"), np.float16)
    sizes = [37, 100] * 20
    cuts = np.cumsum([0] + sizes)
    cuts = cuts[cuts < 1500].tolist() + [1500]
    list(spill.write_through(iter([Rows(parts_of(X[a:b]), y[a:b]) for a, b in zip(cuts, cuts[1:])])))
    assert os.path.getsize(tmp_path / "spill" / "starts.bin") == 8 * -(-1500 // 64)  # an index entry per 64 rows
    batches = list(spill.read_windows(50, 256, np.random.default_rng(3)))
    ids = _ids(batches)
    assert sorted(ids.tolist()) == list(range(1500))
    assert all(b[0].data.dtype == np.float16 for b in batches)
    got = np.vstack([b[0].dense(30) for b in batches])  # as float32: scipy cannot densify float16
    np.testing.assert_array_equal(got, X.toarray().astype(np.float16).astype(np.float32)[ids])


def test_a_label_block_reaches_most_windows_of_every_pass(tmp_path):
    """600 positives in rows 200-800 of 20,000: batch-sized blocks put them in at most 3 of
    an epoch's 10 windows; 64-row pieces across the file spread them over about 6.5."""
    n = 20_000
    y = np.where((np.arange(n) >= 200) & (np.arange(n) < 800), 1.0, -1.0)
    X = sp.csr_matrix(np.ones((n, 1)))
    shuffle = Shuffle(seed=0, window_rows=2048)
    spill = Spill(str(tmp_path / "spill"), np.float64)
    list(spill.write_through(rebatch(_written(X, y, 1000), 256)))
    parts, ym = _memmapped(tmp_path, X, y)
    memmap = ArrayData(parts, ym, "float64", shuffle)

    def windows_with_positives(batches):
        labels = _ids(batches)
        return sum(bool((labels[w:w + 2048] > 0).any()) for w in range(0, n, 2048))

    for read in (lambda e: spill.read_windows(256, 2048, shuffle.rng(e)), lambda e: memmap.batches(256, e)):
        assert np.mean([windows_with_positives(read(e)) for e in range(10)]) > 5


def test_the_spill_index_on_disk_gives_each_piece_its_nonzeros(tmp_path):
    """The index file holds the first nonzero of every 64th row (int64: past 2^32 too), and a
    window's pieces read their bounds from it: neighbours, the last piece (it ends at the last
    nonzero) and a piece past the end of the index."""
    X = source_matrix(1000, cols=30)
    y = np.arange(1000)
    spill = Spill(str(tmp_path / "spill"), np.float64)
    list(spill.write_through(_written(X, y, 100)))
    starts = np.fromfile(tmp_path / "spill" / "starts.bin", np.int64)
    np.testing.assert_array_equal(starts, X.indptr[0:1000:64])
    pieces = np.array([0, 1, 2, 9, 15])  # 16 pieces of 64 rows; piece 15 is rows 960-999
    with open(tmp_path / "spill" / "starts.bin", "rb") as f:
        r0, r1, z0, z1 = spill._pieces(f.fileno(), pieces, 64)
    np.testing.assert_array_equal(r1, np.minimum(1000, r0 + 64))
    np.testing.assert_array_equal(z0, X.indptr[r0])
    np.testing.assert_array_equal(z1, X.indptr[r1])
    big = np.array([0, 5 << 31, 11 << 31], np.int64)
    big.tofile(tmp_path / "big.bin")
    with open(tmp_path / "big.bin", "rb") as f:
        np.testing.assert_array_equal(binding.read_entries(f.fileno(), np.array([2, 0, 1], np.int64)), big[[2, 0, 1]])
        assert binding.read_entries(f.fileno(), np.array([1, 2, 3], np.int64)) is None  # past the end
    many = np.arange(5000, dtype=np.int64) * 7 - 3
    many.tofile(tmp_path / "many.bin")
    # entries in order near each other (read as spans), repeated, far apart, out of order, and runs
    # longer than a span; and a span that would end past the file
    asks = np.array([0, 1, 1, 2, 40, 41, 300, 511, 512, 513, 4000, 3999, 4999, 7, 7] + list(range(1000, 2100)), np.int64)
    with open(tmp_path / "many.bin", "rb") as f:
        np.testing.assert_array_equal(binding.read_entries(f.fileno(), asks), many[asks])
        assert binding.read_entries(f.fileno(), np.array([4990, 4999, 5000], np.int64)) is None


def test_a_shuffled_spill_pass_holds_no_order_or_index_and_cleans_up(tmp_path):
    """The pieces' order is written to the spill's folder while a pass reads it and removed
    after; a truncated index ends the pass with a clear error."""
    X = source_matrix(3000, cols=20)
    y = np.arange(3000)
    folder = tmp_path / "spill"
    spill = Spill(str(folder), np.float64)
    list(spill.write_through(_written(X, y, 500)))
    assert not hasattr(spill, "_starts")
    batches = spill.read_windows(100, 1024, np.random.default_rng(0))
    first = [next(batches)]
    assert (folder / "order.bin").stat().st_size == 4 * -(-3000 // 64)
    assert sorted(_ids(first + list(batches)).tolist()) == list(range(3000))
    assert not (folder / "order.bin").exists()
    with open(folder / "starts.bin", "r+b") as f:
        f.truncate(8 * 10)
    with pytest.raises(OSError, match="index .* is shorter than written"):
        list(spill.read_windows(100, 1024, np.random.default_rng(1)))
    assert not (folder / "order.bin").exists()


def test_the_estimate_prices_the_piece_order_of_a_memmap_pass_only():
    assert order_bytes(10_000_000, 16_384) == 10_000_000 / 64 * 4
    assert order_bytes(10_000_000, 65_536) == -(-10_000_000 // 256) * 4  # bigger window, pieces
    shape = Shape(rows=1_000_000, train_rows=800_000, test_rows=20_000, width=1 << 18, nnz_per_row=40.0, classes=2,
                  dense_source=False)
    on = {mode: parts(validate(mode=mode, shuffle=True), shape)["shuffle"] for mode in ("memmap", "stream")}
    for mode in on:
        assert parts(validate(mode=mode, shuffle=False), shape)["shuffle"] == 0.0
    assert on["memmap"] > order_bytes(800_000, 16_384) > 0
    window = parts(validate(mode="stream", shuffle=True, shuffle_buffer=8192), shape)["shuffle"]
    assert on["stream"] == 2 * window  # the pool only: no order or index grows with the rows


def test_the_pieces_order_is_the_same_on_disk_in_memory_and_when_it_cannot_be_written(tmp_path, caplog):
    from svmcore.data.shuffle_order import window_pieces

    def pieces(folder):
        return np.concatenate(list(window_pieces(1000, 64, np.random.default_rng(7), folder)))

    in_memory = pieces(None)
    np.testing.assert_array_equal(pieces(str(tmp_path)), in_memory)
    assert os.listdir(tmp_path) == []  # the order file goes at the end of the pass
    np.testing.assert_array_equal(pieces(str(tmp_path / "gone")), in_memory)  # no folder: kept in memory, said so
    assert "stays in memory" in caplog.text
    assert sorted(in_memory.tolist()) == list(range(1000))


def _id_file(tmp_path, n: int, cols: int = 30) -> str:
    """A svmlight file whose last column holds each row's number + 1."""
    X = sp.hstack([source_matrix(n, cols=cols), sp.csr_matrix(np.arange(1.0, n + 1).reshape(-1, 1))]).tocsr()
    path = str(tmp_path / "ids.svm")
    dump_svmlight_file(X, np.arange(n) % 2, path, zero_based=False)
    return path


def _row_ids(X, width: int) -> list[int]:
    """The row numbers of a batch of ``_id_file``'s rows (a block)."""
    return (X.csr(width)[:, width - 1].toarray().ravel() - 1).astype(int).tolist()


@pytest.mark.parametrize("parser", ["sklearn", "native"])
def test_a_shuffled_first_pass_spills_its_rows_in_the_order_it_trains_them(tmp_path, parser):
    """Later passes read the spill in pieces of 64 rows. Written in file order, a piece is 64
    neighbours, and in many files neighbours are alike (w8a: 31% of features shared one row
    apart, 9% at 64 rows, 5% at random), so a window held a few kinds of rows: on w8a the lean
    path's balanced accuracy was 1.2 points below the same solver's full permutation (0.789 vs
    0.802, 5 seeds), 0.801 once spilled in the order trained. Written in the order the first
    pass trains them, a piece holds rows from across the shuffle buffer's reach. Either parser,
    with and without shuffling."""
    n, width = 3000, 31
    cfg = validate(dataset=_id_file(tmp_path, n), mode="stream", shuffle_buffer=512, parser=parser)
    for shuffle in (True, False):
        spill = Spill(str(tmp_path / f"spill-{shuffle}"), np.float64)
        data = stream_feed(cfg, n, spill, Shuffle(seed=0, window_rows=512) if shuffle else None, hold_out=False)
        trained = [i for X, _ in data.batches(100, 0) for i in _row_ids(X, width)]  # ids read before the next batch
        assert spill.complete and sorted(trained) == list(range(n))
        written = [i for X, _ in spill.read(100) for i in _row_ids(X, width)]
        assert written == trained
        assert (trained != list(range(n))) == shuffle


def test_a_shuffled_memmap_run_reads_a_copy_whose_chunks_hold_their_rows_mixed(tmp_path):
    """memmap has no first pass to mix its rows in: the binary copy a shuffled run maps holds each
    chunk's training rows in a random order drawn for the copy (the same for every run), so a
    64-row piece of it is 64 rows from across a chunk, not 64 neighbours. An unshuffled run maps
    a copy in file order, in a folder of its own; the held-out rows stay in file order in both."""
    from svmcore.data import copies
    from svmcore.data.sources import CHUNK_ROWS, Source, is_test_row

    n, width = 25_000, 31
    cfg = validate(dataset=_id_file(tmp_path, n), mode="memmap")
    source = Source(cfg)

    def ids(mixed):
        copy = copies.binary_copy(source, str(tmp_path / "cache"), [0.0, 1.0], width, "float64", "csr", n, mixed=mixed)
        return copy.folder, [_row_ids(copy.part(p)[0], width) for p in ("train", "test")]

    (plain_at, (plain, test)), (mixed_at, (mixed, mixed_test)) = ids(False), ids(True)
    train_rows = np.flatnonzero(~is_test_row(np.arange(n), n))
    assert plain == train_rows.tolist() and mixed_test == test and plain_at != mixed_at
    assert ids(True)[1][0] == mixed  # built once, the same order for every run
    assert sorted(mixed) == plain and mixed != plain
    chunk = np.asarray(mixed) // CHUNK_ROWS
    assert (np.diff(chunk) >= 0).all()  # rows stay in their chunk
    pieces = np.asarray(mixed[:len(mixed) // 64 * 64]).reshape(-1, 64)
    assert np.median(pieces.max(axis=1) - pieces.min(axis=1)) > CHUNK_ROWS / 2  # not neighbours


def test_a_shuffled_first_pass_reads_the_text_in_scattered_pieces_split_by_the_held_out_rule(tmp_path):
    """Issue 40's open item: read in file order, the first pass could only mix rows within the
    shuffle buffer's reach, so a file's first rows were all trained first. With the row index the
    scan keeps beside its cache, the pass reads the text in pieces in an order drawn from (seed,
    epoch): the first rows land all over the pass; every training row comes once, no held-out row
    does (the rule on each piece's own row numbers); either parser gives the same order."""
    from svmcore.data.sources import Source, is_test_row, row_index, scan

    n, width = 60_000, 31
    path = _id_file(tmp_path, n)
    train = np.flatnonzero(~is_test_row(np.arange(n), n))
    orders = []
    for parser in ("native", "sklearn"):
        cfg = validate(dataset=path, mode="stream", shuffle_buffer=4096, parser=parser)
        source = Source(cfg)
        scan(source, str(tmp_path / "cache"))
        index = row_index(source, str(tmp_path / "cache"))
        assert index is not None
        feed = stream_feed(cfg, train.shape[0], None, Shuffle(0, 4096), hold_out=True, index=index)
        ids = [i for X, _ in feed.batches(256, 0) for i in _row_ids(X, width)]
        assert sorted(ids) == train.tolist()
        orders.append(ids)
    assert orders[0] == orders[1]
    at = np.empty(n, int)
    at[orders[0]] = np.arange(len(orders[0]))
    first = at[train[train < 2000]] / len(orders[0])  # where the file's first 2,000 rows are trained
    assert np.percentile(first, 5) < 0.1 and np.percentile(first, 95) > 0.8, np.percentile(first, [5, 95])


@pytest.mark.parametrize("row_bytes, entries", [
    (40, 4),  # short rows: a sixteenth of the 16,384-row buffer, 1,024 rows (40 KB)
    (1_200, 3),  # 1.2 KB rows: 3 entries (768 rows, 0.92 MB) fit one 1 MiB parse block; 4 did not
    (4_096, 1),  # one entry (256 rows) is a block: as small as a piece gets
    (65_536, 1),  # an entry wider than a block: still one
])
def test_a_first_pass_piece_is_at_most_a_sixteenth_of_the_buffer_and_one_parse_block(row_bytes, entries):
    from svmcore.data.feeds.source_rows import BLOCK_BYTES
    from svmcore.data.feeds.stream import piece_entries
    from svmcore.data.text_index import STEP

    rows = 1_000_000
    got = piece_entries(16_384, row_bytes * rows, rows)
    assert got == entries
    assert got * STEP <= 16_384 // 16
    assert got == 1 or got * STEP * row_bytes <= BLOCK_BYTES


def test_a_shuffled_first_pass_asks_the_kernel_for_the_next_pieces_before_their_turn(tmp_path, monkeypatch):
    """Each piece at a scattered place of the text is advised (POSIX_FADV_WILLNEED) four pieces
    before it is parsed: the kernel's own read-ahead follows sequential reads only."""
    from svmcore.data.feeds import source_rows

    path = tmp_path / "t.svm"
    path.write_bytes(b"1 1:1\n" * 1000)
    advised, real = [], os.posix_fadvise

    def record(fd, offset, length, advice):
        advised.append((offset, length, advice))
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", record)
    spans = [(600, 1200, 101), (0, 600, 1), (3000, None, 501), (1800, 2400, 301), (1200, 1800, 201), (2400, 3000, 401)]
    seen = []
    for span in source_rows._disk_ahead(iter(spans), str(path), ahead=4):
        seen.append(span)
        # when a piece is handed on, it and the next four (all there are) have been advised
        want = spans[:min(len(spans), len(seen) + 4)]
        assert advised == [(s, 0 if e is None else e - s, os.POSIX_FADV_WILLNEED) for s, e, _ in want]
    assert seen == spans
