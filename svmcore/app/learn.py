"""The Learn page's experiments: each remedy's before and after runs, and what they
measured against each other."""

from __future__ import annotations

from svmcore.app.folders import DataFolders
from svmcore.app.remedies import REMEDIES, Remedy
from svmcore.engine.admission import admit
from svmcore.engine.queue import RunQueue
from svmcore.predict.launch import forecast
from svmcore.spec.config import shown
from svmcore.spec.errors import ConfigError
from svmcore.store.sqlite import Store


class Learn:
    def __init__(self, store: Store, queue: RunQueue, folders: DataFolders):
        self.store = store
        self.queue = queue
        self.folders = folders

    def remedies(self) -> list[Remedy]:
        return list(REMEDIES)

    def run_remedy(self, key: str, base: dict | None = None) -> tuple[int, int]:
        """Queue the remedy's before and after runs; returns their ids."""
        remedy = next((r for r in REMEDIES if r.key == key), None)
        if remedy is None:
            raise ConfigError("remedy", f"unknown remedy {shown(key)}")
        before, after = remedy.configs(self.folders.confined(base))
        for cfg in (before, after):
            admit(cfg, self.folders.cache_dir)
        home = self.store.home
        return (self.queue.submit(before, label=f"{remedy.title}: before", prediction=forecast(before, home)).run_id,
                self.queue.submit(after, label=f"{remedy.title}: after", prediction=forecast(after, home)).run_id)

    def results(self) -> list[dict]:
        """For each remedy, its latest finished before/after pair and the measured saving."""
        out = []
        recs = self.store.list_runs()
        for remedy in REMEDIES:
            before = next((r for r in recs if r.label == f"{remedy.title}: before" and r.status.is_finished()), None)
            after = next((r for r in recs if r.label == f"{remedy.title}: after" and r.status.is_finished()
                          and (before is None or r.id > before.id)), None)
            row = {"remedy": remedy.title, "key": remedy.key, "before_id": before.id if before else None,
                   "after_id": after.id if after else None}
            if before and after:
                b, a = before.result, after.result
                for name in ("peak_rss_mb", "accuracy", "balanced_accuracy", "samples_per_s"):
                    key = "peak_mb" if name == "peak_rss_mb" else name
                    row[f"before_{key}"] = getattr(b, name)
                    row[f"after_{key}"] = getattr(a, name)
                row["saving_pct"] = _saving(b.peak_rss_mb, a.peak_rss_mb)
                row["phase"] = remedy.phase
                row["phase_saving_pct"] = _saving(b.phase_peak(remedy.phase), a.phase_peak(remedy.phase)) \
                    if remedy.phase else None
            out.append(row)
        return out


def _saving(before: float | None, after: float | None) -> float | None:
    """Percent of ``before`` saved by ``after`` (negative: it grew)."""
    return 100 * (before - after) / before if before and after else None
