"""The Learn page's experiments: each remedy's before/after runs on this machine, and
what they measured, with the reference machine's measurement standing in (and saying
so) until this machine has its own."""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.app.folders import DataFolders
from svmcore.app.fit import LOOP_STEPS, measured_headline
from svmcore.app.reference import bench_reference, fit_reference, remedies_reference
from svmcore.app.remedies import REMEDIES, Experiment, Remedy, remedy
from svmcore.app.remedy_results import (
    bench_file,
    change_text,
    claims_row,
    compare,
    lessons,
    machines,
    measured_with,
    bench_lessons,
    bench_row,
    setup_text,
    side,
    speed_spread,
)
from svmcore.engine.admission import admit
from svmcore.engine.queue import RunQueue
from svmcore.predict.launch import forecast
from svmcore.spec.errors import ConfigError
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord
from svmcore.store.sqlite import Store

THIS_MACHINE = "this machine"
REFERENCE = "reference"


def run_label(r: Remedy, e: Experiment, which: str) -> str:
    """The label of a remedy experiment's run (how the page finds its runs again)."""
    return f"Learn · {r.title} · {e.title} · {which}"


@dataclass(frozen=True)
class ExperimentResult:
    """One experiment of one remedy as the page shows it: measured on this machine, or
    the reference machine's measurement (``source``), or nothing yet."""

    remedy: Remedy
    experiment: Experiment
    source: str | None  # THIS_MACHINE, REFERENCE or None
    source_text: str
    before: dict | None = None
    after: dict | None = None
    cmp: dict | None = None
    lessons: tuple[str, ...] = ()
    pending: tuple[int, ...] = ()  # this machine's runs of it, queued or running
    error: str | None = None  # why a finished pair cannot be compared (a run did not complete)

    def as_dict(self) -> dict:
        return {"source": self.source, "source_text": self.source_text, "before": self.before, "after": self.after,
                "cmp": self.cmp, "error": self.error}


class Learn:
    def __init__(self, store: Store, queue: RunQueue, folders: DataFolders, reference_dir: str | None = None):
        self.store = store
        self.queue = queue
        self.folders = folders
        self._reference_dir = reference_dir
        self._reference = remedies_reference(reference_dir)

    def remedies(self) -> list[Remedy]:
        return list(REMEDIES)

    def diagnosis_loop(self) -> dict:
        """The loop the advice describes, step by step, and what ``fit`` measured running it
        (``bench/results/fit.json``, the reference machine's; None before it was measured)."""
        return {"steps": LOOP_STEPS, "measured": measured_headline(fit_reference(self._reference_dir))}

    def reference_machine(self) -> dict | None:
        """The reference measurement's machine, date, seconds of runs and how much the same
        setup's speed varied within it (``speed_spread``), or None if there is none."""
        if not self._reference:
            return None
        return {"machine": self._reference.get("machine", {}), "measured": self._reference.get("measured"),
                "seconds": self._reference.get("seconds"),
                "speed_spread": speed_spread(self._reference.get("remedies", {})),
                "machines": machines(self._reference)}

    def run_remedy(self, key: str, base: dict | None = None, experiment: str | None = None,
                   quick: bool = False, queue: RunQueue | None = None) -> list[tuple[int, int]]:
        """Queue the before and after runs of one remedy's runnable experiments (or of the
        one named); ``base`` overrides knobs of every base, ``quick`` divides the rows of
        synthetic data by ten; ``queue``: another queue than the page's (the class exercise
        measures ahead several at once). Returns (before, after) run ids. Raises
        ConfigError/DataError (nothing queued) if one cannot run."""
        r = remedy(key)
        chosen = [r.experiment(experiment)] if experiment else [e for e in r.experiments if e.runnable() is None]
        if r.measured_by:
            raise ConfigError("remedy", f"{r.title} is no before/after pair of runs: python bench/{r.measured_by}.py "
                                        "measures it on the reference machine")
        if r.pending or not chosen:
            raise ConfigError("remedy", f"{r.title} cannot be measured here yet: {r.pending or 'no runnable setup'}")
        overrides = self.folders.confined(base) if base else None
        pairs = []
        for e in chosen:
            before, after = e.configs(overrides, quick)
            pairs.append((e, admit(before, self.folders.cache_dir), admit(after, self.folders.cache_dir)))
        home, ids = self.store.home, []
        for e, before, after in pairs:
            ids.append(tuple((queue or self.queue).submit(cfg, label=run_label(r, e, which),
                                                          prediction=forecast(cfg, home)).run_id
                             for cfg, which in ((before, "before"), (after, "after"))))
        return ids

    def run_all(self, quick: bool = False) -> list[tuple[int, int]]:
        """Queue every runnable remedy's experiments."""
        return [pair for r in REMEDIES if r.runnable for pair in self.run_remedy(r.key, quick=quick)]

    def pending(self) -> list[int]:
        """Ids of the Learn page's runs still queued or running."""
        live = self.store.list_runs(status=[RunStatus.QUEUED, RunStatus.RUNNING])
        return sorted(r.id for r in live if (r.label or "").startswith("Learn · "))

    def results(self) -> list[ExperimentResult]:
        """Every experiment of every remedy: this machine's latest finished pair, else the
        reference measurement, else nothing; with the runs still going."""
        by_label: dict[str, list[RunRecord]] = {}
        for rec in self.store.list_runs(damaged=False):  # a damaged pair measures nothing
            if (rec.label or "").startswith("Learn · "):
                by_label.setdefault(rec.label, []).append(rec)
        out = []
        for r in REMEDIES:
            for e in r.experiments:
                out.append(self._result(r, e, by_label))
        return out

    def claims(self, results: list[ExperimentResult] | None = None) -> list[dict]:
        """The claims table: one row per experiment of every remedy (one row for a remedy
        that has none yet), in the order of the advice."""
        results = self.results() if results is None else results
        rows = []
        for r in REMEDIES:
            mine = [x for x in results if x.remedy.key == r.key]
            if r.measured_by:
                rows.append(bench_row(r, bench_reference(bench_file(r), self._reference_dir)))
            elif not r.experiments:
                rows.append(claims_row(r, None, None))
            for x in mine:
                rows.append(claims_row(r, x.experiment, x.as_dict()))
        return rows

    def measured_by_bench(self, r: Remedy) -> list[str]:
        """What the benchmark of a remedy that is no pair of runs measured, a sentence per
        case (the reference machine's figures); [] for the others or before it ran."""
        return bench_lessons(r, bench_reference(bench_file(r), self._reference_dir)) if r.measured_by else []

    @staticmethod
    def setup_text(run: dict) -> str:
        """A measured run's setup in a few words (``run``: a side of an ExperimentResult)."""
        return setup_text(run["config"])

    @staticmethod
    def measured_with(experiment: Experiment, before: dict | None) -> str:
        """' (measured with rows=100,000)' when the run measured another setup than stated."""
        return measured_with(experiment, before)

    @staticmethod
    def change_text(before: dict, after: dict) -> str:
        """The knobs the after run changed: 'batch_size 8192 → 256'."""
        return change_text(before["config"], after["config"])

    def _result(self, r: Remedy, e: Experiment, by_label: dict[str, list[RunRecord]]) -> ExperimentResult:
        befores = by_label.get(run_label(r, e, "before"), [])
        afters = by_label.get(run_label(r, e, "after"), [])
        pending = tuple(sorted(x.id for x in befores + afters if not x.status.is_finished()))
        pair = _latest_pair(befores, afters)
        if pair:
            b, a = pair
            before, after = self._side(b), self._side(a)
            cmp = compare(before, after, r.acts_on)
            error = None
            if cmp is None:
                bad = b if b.status != RunStatus.COMPLETED else a
                which = "before" if bad is b else "after"
                error = f"the {which} run (run {bad.id}) ended {bad.status.value}" + (
                    f" at an exact peak of {bad.summary.peak_rss_mb:,.0f} MiB" if bad.summary.peak_rss_mb else "")
            return ExperimentResult(r, e, THIS_MACHINE, f"this machine (runs {b.id} and {a.id})", before, after, cmp,
                                    tuple(lessons(r, cmp)), pending, error)
        ref = ((self._reference or {}).get("remedies", {}).get(r.key, {}) or {}).get(e.key)
        if ref:
            cmp = compare(ref["before"], ref["after"], r.acts_on)
            return ExperimentResult(r, e, REFERENCE, "reference machine, not yours", ref["before"], ref["after"], cmp,
                                    tuple(lessons(r, cmp)), pending)
        return ExperimentResult(r, e, None, "not measured yet", pending=pending)

    def _side(self, rec: RunRecord) -> dict:
        return side(rec.config, rec.summary, self.store.samples(rec.id), rec.id, rec.status.value)


def _latest_pair(befores: list[RunRecord], afters: list[RunRecord]) -> tuple[RunRecord, RunRecord] | None:
    """The latest finished 'after' run and the 'before' run queued just ahead of it."""
    for a in sorted(afters, key=lambda x: -x.id):
        if not a.status.is_finished():
            continue
        b = max((x for x in befores if x.id < a.id), key=lambda x: x.id, default=None)
        if b is not None and b.status.is_finished():
            return b, a
    return None
