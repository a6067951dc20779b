"""Two real causes of memory that grows while training, to switch on and see (the
``transform_cache`` and ``history`` knobs); the run imports this module only when one is on.

- ``Cache``: kernel-approx's transformed rows kept from the first pass for the later ones,
  which then skip the transform: in memory (a list that grows through the first pass) or on
  disk (a spill of the transformed rows in the run's ``spill`` folder, which the engine's
  leftovers cleanup removes after a kill), read back a batch at a time.
- ``History``: a copy of each batch's arrays kept after its step, as plain references (held
  to the end of training: ``gc.collect()`` frees none of it) or in a record that refers to
  itself and is dropped at once (reference counting cannot free a cycle: it waits for the
  garbage collector, which runs after a count of new objects, not of bytes).

Each counts what it holds exactly (the bytes of its arrays alive) for the run's summary.
"""

from __future__ import annotations

import logging
import os
from typing import Callable, Iterator

import numpy as np

from svmcore.data.copies import remove_tree
from svmcore.data.rows import Dense, Rows
from svmcore.data.shuffle_order import generator
from svmcore.spec.choices import History as HistoryMode, TransformCache
from svmcore.spec.config import RunConfig
from svmcore.spec.result import Kept

log = logging.getLogger(__name__)


class Cache:
    """The transformed rows of the first pass, for the later passes (``batches``)."""

    def __init__(self, cfg: RunConfig, transform: Callable, folder: str | None):
        self.on_disk = cfg.transform_cache == TransformCache.DISK
        self.transform = transform
        self.folder = folder
        self.seed = cfg.seed if cfg.shuffle else None
        self.blocks: list = []  # memory: (rows, codes) a batch; disk: each batch's row count
        self.rows = self.bytes = 0
        self.complete = False
        self.failed: str | None = None
        self._files: list = []

    def batches(self, batches_of: Callable[[int], Iterator[Rows]]) -> Callable[[int], Iterator[Rows]]:
        """``batches_of`` with every batch transformed (``Dense`` rows): the first pass transforms
        and keeps them, later passes read them back (in a new order each pass when shuffled)."""
        def of(epoch: int) -> Iterator[Rows]:
            if epoch > 0 and self.complete:
                return self._read(epoch)
            return self._transformed(batches_of(epoch), keep=epoch == 0)
        return of

    def _transformed(self, raw: Iterator[Rows], keep: bool) -> Iterator[Rows]:
        if keep and self.on_disk:
            self._open()
        try:
            for X, codes in raw:
                Z = self.transform(X)
                if keep:
                    self._keep(Z, codes)
                yield Rows(Dense(Z), codes)
            self.complete = keep and self.failed is None
        finally:
            self._close()

    def _keep(self, Z: np.ndarray, codes: np.ndarray) -> None:
        if not self.on_disk:
            self.blocks.append((Z, codes.astype(np.int32, copy=False)))
        elif self._files:
            try:
                np.ascontiguousarray(Z).tofile(self._files[0])
                codes.astype(np.int32, copy=False).tofile(self._files[1])
            except OSError as e:  # a full disk: give the cache up, later passes transform again
                self.failed = f"could not write the cache in {self.folder} ({e}); later passes transform again"
                log.warning(self.failed)
                self._close()
                remove_tree(self.folder)
                return
            self.blocks.append(Z.shape[0])
        else:
            return
        self.rows += Z.shape[0]
        self.bytes += Z.nbytes + codes.shape[0] * 4  # int32 class codes
        self._width, self._dtype = Z.shape[1], Z.dtype

    def _open(self) -> None:
        os.makedirs(self.folder, exist_ok=True)
        self._files = [open(os.path.join(self.folder, name), "wb") for name in ("transformed.bin", "codes.bin")]

    def _close(self) -> None:
        for f in self._files:
            f.close()
        self._files = []

    def _read(self, epoch: int) -> Iterator[Rows]:
        rng = generator([self.seed, epoch, 42]) if self.seed is not None else None
        order = rng.permutation(len(self.blocks)) if rng is not None else range(len(self.blocks))
        if not self.on_disk:
            for i in order:
                Z, codes = self.blocks[i]
                if rng is None:
                    yield Rows(Dense(Z), codes)
                else:
                    mix = rng.permutation(codes.shape[0])
                    yield Rows(Dense(Z[mix]), codes[mix])
            return
        starts = np.concatenate([[0], np.cumsum(self.blocks)])
        row_bytes = self._width * self._dtype.itemsize
        with open(os.path.join(self.folder, "transformed.bin"), "rb") as fz, \
                open(os.path.join(self.folder, "codes.bin"), "rb") as fc:
            for i in order:
                n, at = self.blocks[i], int(starts[i])
                fz.seek(at * row_bytes)
                fc.seek(at * 4)
                Z, codes = np.fromfile(fz, self._dtype, n * self._width), np.fromfile(fc, np.int32, n)
                if Z.shape[0] != n * self._width or codes.shape[0] != n:
                    raise OSError(f"the cache of transformed rows in {self.folder} is shorter than written")
                Z = Z.reshape(n, self._width)
                if rng is not None:
                    mix = rng.permutation(n)
                    Z, codes = Z[mix], codes[mix]
                yield Rows(Dense(Z), codes)

    def release(self) -> dict:
        """Let the cache go (its files deleted); what it held."""
        self.blocks = []
        if self.on_disk:
            self._close()
            remove_tree(self.folder)
        return {"cache": "disk" if self.on_disk else "memory", "cache_rows": self.rows, "cache_bytes": self.bytes,
                "cache_failed": self.failed}


class _Record(list):
    """One batch's arrays; counts itself out of its history when it is freed."""

    __slots__ = ("history", "nbytes")

    def __del__(self):
        self.history.alive_bytes -= self.nbytes
        self.history.alive -= 1


class History:
    """A copy of every batch's arrays after its step (``keep``): referenced from a list, or
    in a record that refers to itself, dropped at once."""

    def __init__(self, cfg: RunConfig):
        self.cycles = cfg.history == HistoryMode.CYCLES
        self.kept: list = []
        self.batches = self.bytes = self.alive = self.alive_bytes = 0
        self.most_alive = self.most_alive_bytes = 0

    def keep(self, X, codes: np.ndarray) -> None:
        record = _Record(np.array(a) for a in ([X.array] if isinstance(X, Dense) else list(X)) + [codes])
        record.history, record.nbytes = self, sum(a.nbytes for a in record)
        self.batches += 1
        self.bytes += record.nbytes
        self.alive += 1
        self.alive_bytes += record.nbytes
        if self.alive_bytes > self.most_alive_bytes:
            self.most_alive, self.most_alive_bytes = self.alive, self.alive_bytes
        if self.cycles:
            record.append(record)  # unreachable once this step returns, yet its count never falls to 0
        else:
            self.kept.append(record)

    def after(self, fit: Callable) -> Callable:
        """``fit`` that keeps each batch after its step."""
        def step(X, codes) -> None:
            fit(X, codes)
            self.keep(X, codes)
        return step

    def release(self) -> dict:
        """Let the history go (a cyclic one waits for the collector still); what it held."""
        self.kept = []
        return {"history": "cycles" if self.cycles else "refs", "history_batches": self.batches,
                "history_bytes": self.bytes, "history_most_held_batches": self.most_alive,
                "history_most_held_bytes": self.most_alive_bytes}


def wrap(cfg: RunConfig, trainer, batches_of: Callable, fit: Callable, folder: str | None):
    """The run's passes with the accumulation knobs on: (batches_of, fit, release), where
    ``release()`` lets what they held go and says what it was (``result.Kept``)."""
    cache = history = None
    if cfg.transform_cache != TransformCache.NONE:
        cache = Cache(cfg, trainer.transform, folder)
        batches_of = cache.batches(batches_of)
        fit = lambda X, codes: trainer.fit(X, codes, transformed=True)  # noqa: E731
    if cfg.history != HistoryMode.NONE:
        history = History(cfg)
        fit = history.after(fit)

    def release() -> Kept:
        return Kept(**{k: v for held in (cache, history) if held is not None for k, v in held.release().items()})
    return batches_of, fit, release
