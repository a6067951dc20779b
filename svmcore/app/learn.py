"""The Learn page's experiments: each remedy's before/after runs on this machine, and
what they measured, with the reference machine's measurement standing in (and saying
so) until this machine has its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from svmcore.app.folders import DataFolders
from svmcore.app.fit import LOOP_STEPS
from svmcore.app.headlines import change_text
from svmcore.app.reference import read
from svmcore.app.remedies import REMEDIES, Experiment, Remedy, remedy
from svmcore.app.remedy_results import (
    claims_row,
    compare,
    lessons,
    machines,
    measured_row,
    measured_with,
    setup_text,
    side,
    speed_spread,
)
from svmcore.engine.queue import RunQueue
from svmcore.predict.launch import admit
from svmcore.spec.config import validate
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

    def heading(self) -> str:
        """The experiment's title, the setup it was measured with when not the stated one
        (quick mode's tenth of the rows), and why it is there."""
        e = self.experiment
        return f"**{e.title}**{measured_with(e, self.before)}" + (f" · {e.why}" if e.why else "")

    def measured_on(self) -> str:
        """Where the pair was measured, the before run's setup and what the after run changed."""
        before, after = (validate(r["config"]).to_dict() for r in (self.before, self.after))
        return (f"Measured on **{self.source_text}**. Before: {setup_text(self.before['config'])}; after: "
                f"{change_text(after, before)}.")


class Loop(NamedTuple):
    """The diagnosis loop as Learn teaches it: its steps, and what ``fit`` measured running
    it on the reference machine, in a sentence (None before it was measured)."""

    steps: tuple[str, ...]
    measured: str | None


class SourcesNote(NamedTuple):
    """Where the page's numbers come from, in a sentence: the reference machine's
    (``reference`` True) or, every one of them, this machine's."""

    text: str
    reference: bool


class BenchFinding(NamedTuple):
    """What the benchmark of a remedy that is no pair of runs measured: where it comes
    from, and a sentence per case (the reference machine's figures)."""

    caption: str
    lessons: tuple[str, ...]


class Learn:
    def __init__(self, store: Store, queue: RunQueue, folders: DataFolders, reference_dir: str | None = None):
        self.store = store
        self.queue = queue
        self.folders = folders
        self._reference_dir = reference_dir
        self._reference = read("remedies", reference_dir)

    def remedies(self) -> list[Remedy]:
        return list(REMEDIES)

    def diagnosis_loop(self) -> Loop:
        """The loop the advice describes, and what ``fit`` measured running it."""
        return Loop(tuple(LOOP_STEPS), loop_note(read("fit", self._reference_dir)))

    def sources_note(self, results: list[ExperimentResult]) -> SourcesNote | None:
        """Where the page's numbers come from: the reference machine's while a row is
        theirs; this machine's once every runnable remedy was measured here; None while
        nothing is measured."""
        sources = {x.source for x in results if x.source}
        if REFERENCE in sources and self._reference:
            where = "; ".join(f"{desc}, on {when} ({', '.join(keys)})"
                              for (desc, when), keys in machines(self._reference).items())
            return SourcesNote(f"Rows marked **reference machine** were measured there, not on yours: {where} "
                               f"(`{self._reference.command}`). Measure on this machine to replace them with yours.",
                               True)
        if sources == {THIS_MACHINE}:
            return SourcesNote("Every runnable remedy has been measured on this machine.", False)
        return None

    def measure_all_help(self) -> str:
        """What "Measure all" does, and how long it took the reference machine."""
        ref = self._reference
        took = f" (the reference machine took {ref.seconds / 60:,.0f} minutes)" if ref and ref.seconds else ""
        return f"Every runnable remedy's before and after runs at the stated setups, one at a time through the queue{took}."

    def speed_note(self, results: list[ExperimentResult]) -> str | None:
        """How much the same setup's speed varied on the reference machine (``speed_spread``),
        while some row is its; None otherwise."""
        spread = speed_spread(self._reference.figures) if self._reference else None
        if not spread or REFERENCE not in {x.source for x in results}:
            return None
        return (f"Speed on the reference machine: the default setup ran at {spread['min']:,.0f} to "
                f"{spread['max']:,.0f} samples/s over its {spread['runs']} before-runs (other work shared its "
                f"cores), so speed changes within {spread['ratio']:.1f}x are noise there. Their exact peaks "
                f"stayed within {spread['peak_min_mb']:,.1f}–{spread['peak_max_mb']:,.1f} MiB.")

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
        if not chosen:
            raise ConfigError("remedy", f"{r.title} cannot be measured here yet: no runnable setup")
        overrides = self.folders.confined(base) if base else None
        pairs = []
        for e in chosen:
            before, after = e.configs(overrides, quick)
            pairs.append((e, admit(before, self.store.home), admit(after, self.store.home)))
        return [tuple((queue or self.queue).submit(launch, label=run_label(r, e, which)).run_id
                      for launch, which in ((before, "before"), (after, "after"))) for e, before, after in pairs]

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
        return [self._result(r, e, by_label) for r in REMEDIES for e in r.experiments]

    def claims(self, results: list[ExperimentResult] | None = None) -> list[dict]:
        """The claims table: one row per experiment of every remedy (one row for a remedy
        that has none yet), in the order of the advice."""
        results = self.results() if results is None else results
        rows = []
        for r in REMEDIES:
            if r.measured_by:
                rows.append(measured_row(r, read(r.measured_by, self._reference_dir)))
            elif not r.experiments:
                rows.append(claims_row(r, None, None))
            rows += [claims_row(r, x.experiment, x.as_dict()) for x in results if x.remedy.key == r.key]
        return rows

    def measured_by_bench(self, r: Remedy, see_also: bool = False) -> BenchFinding | None:
        """What the benchmark of a remedy that is no pair of runs measured (``see_also``: the
        benchmark Learn shows beside a remedy, such as what tracing costs beside the monitoring's
        cost, its verdict ending the caption); None for a remedy that has none."""
        name = r.see_also if see_also else r.measured_by
        if not name:
            return None
        ref = read(name, self._reference_dir)
        if ref is None:
            return BenchFinding(f"Not measured yet: `python bench/{name}.py`.", ())
        return BenchFinding(f"Measured by `{ref.command}` on the reference machine ({ref.machine}, {ref.measured}; "
                            "exact peaks; see docs/benchmarks.md):"
                            + (f" {ref.figures['row']['verdict']}." if see_also else ""), tuple(ref.figures["lessons"]))

    def _result(self, r: Remedy, e: Experiment, by_label: dict[str, list[RunRecord]]) -> ExperimentResult:
        befores = by_label.get(run_label(r, e, "before"), [])
        afters = by_label.get(run_label(r, e, "after"), [])
        pending = tuple(sorted(x.id for x in befores + afters if not x.status.is_finished()))
        pair = latest_pair(befores, afters)
        if pair:
            b, a = pair
            before, after = (side(x.config, x.summary, self.store.samples(x.id), x.id, x.status.value) for x in pair)
            cmp = compare(before, after, r.acts_on)
            error = None
            if cmp is None:
                bad = b if b.status != RunStatus.COMPLETED else a
                which = "before" if bad is b else "after"
                error = f"the {which} run (run {bad.id}) ended {bad.status.value}" + (
                    f" at an exact peak of {bad.summary.peak_rss_mb:,.0f} MiB" if bad.summary.peak_rss_mb else "")
            return ExperimentResult(r, e, THIS_MACHINE, f"this machine (runs {b.id} and {a.id})", before, after, cmp,
                                    tuple(lessons(r, cmp)), pending, error)
        ref = (self._reference.figures.get(r.key) or {}).get(e.key) if self._reference else None
        if ref:
            cmp = compare(ref["before"], ref["after"], r.acts_on)
            return ExperimentResult(r, e, REFERENCE, "reference machine, not yours", ref["before"], ref["after"], cmp,
                                    tuple(lessons(r, cmp)), pending)
        return ExperimentResult(r, e, None, "not measured yet", pending=pending)


def latest_pair(befores: list[RunRecord], afters: list[RunRecord]) -> tuple[RunRecord, RunRecord] | None:
    """The latest finished 'after' run and the 'before' run queued just ahead of it."""
    for a in sorted(afters, key=lambda x: -x.id):
        if not a.status.is_finished():
            continue
        b = max((x for x in befores if x.id < a.id), key=lambda x: x.id, default=None)
        if b is not None and b.status.is_finished():
            return b, a
    return None


def queued_note(pairs: list[tuple[int, int]]) -> str:
    """What "Measure" queued, in a sentence."""
    return (f"Queued {len(pairs)} before/after pair(s): runs " + ", ".join(f"{b} and {a}" for b, a in pairs)
            + ". This page shows each result when its pair has finished.")


def loop_note(ref) -> str | None:
    """What ``fit`` measured on the reference machine (``reference.Reference`` of ``fit``), in a sentence."""
    if ref is None:
        return None
    m = ref.figures
    given = (f"; against the best fitting point of a small sweep over the same knobs it gave up "
             f"{m['median_given_up']:+.3f} balanced accuracy at the median (worst {m['worst_given_up']:+.3f})"
             if m["median_given_up"] is not None else "")
    return (f"Measured on the reference machine ({ref.machine}, {ref.measured}): from {m['points']} starting points "
            f"that did not fit their budget, fit ended within it from **{m['fitted']}**, in {m['mean_runs'] or 0:.1f} "
            f"runs on average (at most {m['most_runs'] or 0}){given}. See docs/benchmarks.md.")
