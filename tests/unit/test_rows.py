"""The batch type (svmcore.data.rows): CSR parts and class codes without scipy, whose row
operations give the rows scipy's indexing gives, and whose shuffle buffer moves rows in
the order of its rule (``_buffer_rule``, in plain Python) with the same random draws."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from svmcore.data import rows
from svmcore.data.rows import Parts, Rows

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _csr(n: int, dtype=np.float64, seed: int = 0) -> sp.csr_matrix:
    X = sp.random(n, 300, density=0.05, random_state=seed, format="csr", dtype=dtype)
    X.indices = X.indices.astype(np.int32)
    return X


def _parts(X: sp.csr_matrix) -> Parts:
    return Parts(X.data, X.indices.astype(np.int32), X.indptr.astype(np.int64))


def _dense(p: Parts, n_features: int = 300) -> np.ndarray:
    return sp.csr_matrix((p.data, p.indices, p.indptr), shape=(p.n_rows, n_features)).toarray()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gather_take_slice_and_concat_give_scipys_rows(dtype):
    X = _csr(500, dtype)
    p = _parts(X)
    pick = np.random.default_rng(1).permutation(500)[:123]
    assert np.array_equal(_dense(p.gather(pick)), X[pick].toarray())
    assert np.array_equal(_dense(p.take(pick)), X[pick].toarray())
    assert p.gather(pick).data.dtype == dtype
    assert np.array_equal(_dense(p.slice(100, 250)), X[100:250].toarray())
    assert np.array_equal(_dense(p.slice(100, 250).from_zero()), X[100:250].toarray())
    joined = rows.concat([p.slice(0, 100).from_zero(), p.slice(100, 500).from_zero()])
    assert np.array_equal(_dense(joined), X.toarray())
    pool = rows.Pool([p.slice(0, 100).from_zero(), p.slice(100, 500).from_zero()])
    assert np.array_equal(_dense(pool.gather(pick)), X[pick].toarray())
    whole = rows.Pool([p])  # one block (a spill's window) is gathered as one matrix
    assert whole.whole is not None
    assert np.array_equal(_dense(whole.gather(pick)), X[pick].toarray())
    assert whole.gather(pick).data.dtype == dtype
    with pytest.raises(ValueError, match="rows must be in"):
        whole.gather(np.array([500]))
    assert np.array_equal(p.csr(300).toarray(), X.toarray())


def test_rebatch_cuts_exact_batches_in_order():
    X = _csr(1000)
    p, codes = _parts(X), np.arange(1000) % 3
    pieces = [(p.slice(a, b).from_zero(), codes[a:b]) for a, b in [(0, 7), (7, 300), (300, 301), (301, 1000)]]
    out = list(rows.rebatch(pieces, 128))
    assert all(isinstance(r, Rows) for r in out)
    assert [r.codes.shape[0] for r in out] == [128] * 7 + [1000 - 7 * 128]
    assert np.array_equal(np.concatenate([r.codes for r in out]), codes)
    assert np.array_equal(np.vstack([_dense(r.X) for r in out]), X.toarray())


@pytest.mark.parametrize("batch", [1, 50, 128, 300, 2000])
def test_rebatch_gathers_picked_rows_straight_from_their_blocks(batch):
    """The lean path hands rebatch each parsed block with its kept rows (``Picked``): the
    batches hold those rows in order, as if they had been copied out first, and leftovers
    wait as picked rows of their blocks, not as copies."""
    X = _csr(1000)
    p, codes = _parts(X), np.arange(1000) % 3
    keep = np.flatnonzero(np.arange(1000) % 7 != 3)  # a held-out row every 7th
    pieces = []
    for a, b in [(0, 90), (90, 91), (91, 400), (400, 1000)]:
        mine = keep[(keep >= a) & (keep < b)] - a
        pieces.append((rows.Picked(p.slice(a, b).from_zero(), mine), codes[a:b][mine]))
    pieces.insert(2, (p.slice(0, 5).from_zero(), codes[:5]))  # a plain piece among them
    want = np.concatenate([keep[keep < 91], np.arange(5), keep[keep >= 91]])
    out = list(rows.rebatch(pieces, batch))
    assert [r.codes.shape[0] for r in out[:-1]] == [batch] * (len(out) - 1) and 0 < out[-1].codes.shape[0] <= batch
    assert np.array_equal(np.concatenate([r.codes for r in out]), codes[want])
    assert np.array_equal(np.vstack([_dense(r.X) for r in out]), X[want].toarray())
    assert all(r.X.indptr[0] == 0 and r.X.data.base is None for r in out)  # compact arrays of their own


def _buffer_rule(chunks: list[np.ndarray], pool_rows: int, rng) -> np.ndarray:
    """The shuffle buffer's rule on row ids, in plain Python: add a chunk; over ``pool_rows``,
    draw an order of the buffer, the first rows of it leave, the last half pool stays, in that
    order; at the end the rest leave in one more drawn order."""
    buf, out = [], []
    for ids in chunks:
        buf.extend(ids.tolist())
        if len(buf) > pool_rows:
            order, keep = rng.permutation(len(buf)), pool_rows // 2
            out += [buf[i] for i in order[:len(buf) - keep]]
            buf = [buf[i] for i in order[len(buf) - keep:]]
    if buf:
        out += [buf[i] for i in rng.permutation(len(buf))]
    return np.array(out)


@pytest.mark.parametrize("pool_rows", [100, 333, 5000])
def test_the_shuffle_buffer_moves_rows_by_its_rule(pool_rows):
    X = _csr(2000)
    ids = np.arange(2000)
    # blocks of 250 rows go in a batch of 64 at a time: the rule's rounds are the batches'
    classic = _buffer_rule([ids[s:s + 64] for s in range(0, 2000, 64)], pool_rows, np.random.default_rng(5))
    p = _parts(X)
    pieces = [(p.slice(s, s + 250).from_zero(), ids[s:s + 250]) for s in range(0, 2000, 250)]
    out = list(rows.pool_shuffle(iter(pieces), pool_rows, np.random.default_rng(5), 64))
    lean = np.concatenate([r.codes for r in out])
    assert sorted(lean.tolist()) == list(range(2000)) and not np.array_equal(lean, ids)
    assert np.array_equal(lean, classic)
    assert np.array_equal(np.vstack([_dense(r.X) for r in out]), X[lean].toarray())
    # a batch at a time to the very end: the last pool, handed out whole, was the first pass's peak
    assert max(r.codes.shape[0] for r in out) <= 64


@pytest.mark.parametrize("pool_rows,batch", [(100, 64), (333, 50), (5000, 128), (300, 1)])
def test_blocks_go_straight_into_the_shuffle_buffer_in_the_same_order(pool_rows, batch):
    """The lean path's first pass: each block's rows gathered straight into the shuffle buffer
    as it comes (rows of the next batches wait after the pool, and move with the kept rows), not
    gathered into a batch first. Same rounds, same random draws, same rows out as shuffling
    gathered batches."""
    X = _csr(2000)
    p, ids = _parts(X), np.arange(2000)
    keep = np.flatnonzero(ids % 7 != 3)
    cuts = [(0, 90), (90, 91), (91, 700), (700, 2000)]

    def blocks():
        for a, b in cuts:
            mine = keep[(keep >= a) & (keep < b)] - a
            yield rows.Picked(p.slice(a, b).from_zero(), mine), ids[a:b][mine]

    gathered = list(rows.pool_shuffle(rows.rebatch(blocks(), batch), pool_rows, np.random.default_rng(5), batch))
    direct = list(rows.pool_shuffle(blocks(), pool_rows, np.random.default_rng(5), batch))
    assert [r.codes.tolist() for r in direct] == [r.codes.tolist() for r in gathered]
    order = np.concatenate([r.codes for r in direct])
    assert sorted(order.tolist()) == keep.tolist()
    assert np.array_equal(np.vstack([_dense(r.X) for r in direct]), X[order].toarray())


@pytest.mark.parametrize("pool_rows,batch", [(100, 64), (333, 50), (5000, 128)])
def test_recycled_batches_are_the_same_rows_while_each_is_used_before_the_next(pool_rows, batch):
    """The lean path's first pass gathers each full batch into one of two buffer sets used in
    turn. A loop that is done with each batch before it takes the next (through ``rebatch``,
    which holds a full batch's remainder while it takes the next one when a round ends short)
    sees the same rows as with fresh arrays; and the buffers are really reused."""
    X = _csr(2000)
    p, ids = _parts(X), np.arange(2000)
    pieces = [(p.slice(s, min(s + 90, 2000)).from_zero(), ids[s:s + 90]) for s in range(0, 2000, 90)]

    def seen(recycled):
        out, arrays = [], []
        for r in rows.rebatch(rows.pool_shuffle(iter(pieces), pool_rows, np.random.default_rng(5), batch,
                                                recycled=recycled), batch):
            out.append((r.codes.tolist(), _dense(r.X)))  # used now, let go before the next
            arrays.append(r.X.data)  # kept, not used: fresh batches would then each have their own memory
        return out, arrays

    fresh, _ = seen(False)
    reused, arrays = seen(True)
    assert [c for c, _ in reused] == [c for c, _ in fresh]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(reused, fresh))
    if pool_rows >= 10 * batch:  # rounds of many full batches (small pools' rounds end short, and their
        # batches are mostly pieces of two, gathered fresh by ``rebatch``)
        assert sum(np.shares_memory(a, b) for a, b in zip(arrays, arrays[2:])) > len(arrays) // 2


def test_recycled_sets_are_used_in_turn():
    ring = rows.Recycled(3)
    p = _parts(_csr(50))
    codes = np.arange(50)
    for _ in range(3):  # each set sized once, for 20 rows
        ring.gather(p, np.arange(20), codes)
    got = [ring.gather(p, np.array([i, i + 1]), codes) for i in range(4)]
    assert np.shares_memory(got[0].X.data, got[3].X.data) and np.shares_memory(got[0].X.indptr, got[3].X.indptr)
    assert not np.shares_memory(got[0].codes, got[3].codes)  # the codes are the caller's to keep
    assert not any(np.shares_memory(got[0].X.data, g.X.data) for g in got[1:3])
    assert got[3].codes.tolist() == [3, 4] and np.array_equal(_dense(got[3].X), _dense(p.gather(np.array([3, 4]))))


def test_gathering_into_a_buffer_checks_its_room():
    from svmcore.data.native import binding

    p = _parts(_csr(50))
    need = int(p.indptr[4] - p.indptr[1])
    with pytest.raises(ValueError, match="out_data"):
        binding.gather_rows_into(*p, np.arange(1, 4), np.empty(need - 1), np.empty(need, np.int32),
                                 np.empty(4, np.int64))
    with pytest.raises(ValueError, match="out_indptr"):
        binding.gather_rows_into(*p, np.arange(1, 4), np.empty(need), np.empty(need, np.int32),
                                 np.empty(3, np.int64))
    with pytest.raises(TypeError, match="out_data"):
        binding.gather_rows_into(*p, np.arange(1, 4), np.empty(need, np.float32), np.empty(need, np.int32),
                                 np.empty(4, np.int64))
    out = np.zeros(need + 5), np.zeros(need + 5, np.int32), np.zeros(4, np.int64)
    assert binding.gather_rows_into(*p, np.arange(1, 4), *out) == need
    assert np.array_equal(out[0][:need], p.data[p.indptr[1]:p.indptr[4]]) and not out[0][need:].any()


def test_the_shuffle_arena_keeps_rows_in_place_and_holds_one_pool():
    """Rows added, taken and kept (moved to the front in place) over many rounds are the rows a
    plain list would hold, in the kept order; the arrays never grow past the fullest round."""
    X = _csr(3000, seed=4)
    p = _parts(X)
    ids = np.arange(3000)
    arena, model = rows.ShuffleArena(), []
    rng = np.random.default_rng(2)
    fullest = 0
    for s in range(0, 3000, 150):
        arena.stage(p.slice(s, s + 150))
        arena.add(ids[s:s + 150])
        model += list(range(s, s + 150))
        fullest = max(fullest, len(model))
        if len(model) > 400:
            order = rng.permutation(len(model))
            got = arena.take(order[:100])
            want = [model[i] for i in order[:100]]
            assert got.codes.tolist() == want
            assert np.array_equal(_dense(got.X), X[want].toarray())
            kept = order[-250:]
            arena.keep(kept)
            model = [model[i] for i in kept]
    everything = arena.take(np.arange(len(model)))
    assert everything.codes.tolist() == model
    assert np.array_equal(_dense(everything.X), X[model].toarray())
    assert arena.codes.shape[0] <= fullest * 9 // 8 + 1
    assert arena.data.shape[0] <= int(X[:fullest].nnz * 1.3)


def test_importing_the_batch_type_loads_no_scipy():
    code = "import sys, svmcore.data.rows, svmcore.data.spill, svmcore.worker.loop; print('scipy' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT), check=True)
    assert proc.stdout.strip() == "False"
