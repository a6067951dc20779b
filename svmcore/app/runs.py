"""Runs as the dashboard sees them: launch, cancel, a live or finished view, the
history table (its filters, grouping and tags, like an experiment tracker's: pure, rows of
``Runs.history`` in, rows out), comparison, export and delete."""

from __future__ import annotations

import io
import itertools
import json
import os
import statistics
from dataclasses import dataclass

from svmcore.app.folders import DataFolders
from svmcore.app.noise import Noise, measured_noise, repeat_groups, setting_key, spread
from svmcore.app.headlines import (Comparison, RunFacts, Slide, changed_knobs_text, check_story, compare, data_text,
                                   default_question, names_against, pick_baseline, read_knob, story_slides)
from svmcore.engine import traces
from svmcore.engine.leftovers import release_leftovers
from svmcore.engine.queue import RunQueue
from svmcore.engine.registry import get_active
from svmcore.engine.summary import MemorySample
from svmcore.predict.launch import admit
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS
from svmcore.spec.names import check_name, check_tag
from svmcore.store.export import run_export, samples_csv
from svmcore.spec.result import Forecast, RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store
from svmcore.sweeps.frontier import TradeoffPoint, tradeoff_points


MOST_REPEATS = 9  # seeds a repeat adds at once


@dataclass(frozen=True)
class RunView:
    """Everything a page needs to draw one run, live or finished."""

    id: int
    status: RunStatus
    config: dict
    summary: RunSummary
    samples: list[MemorySample]
    events: list[dict]
    label: str | None
    created_at: float | None
    phase: str | None = None
    elapsed_s: float | None = None
    queue_position: int | None = None
    prediction: Forecast | None = None  # the calibrated forecast kept beside the measurement
    host: str | None = None
    remote: bool = False  # a Dask worker runs it: its samples and events arrive when it ends
    name: str | None = None  # the user's name for it
    colour: str | None = None  # the colour the user picked for it
    damage: tuple[str, ...] = ()  # what of its record could not be read (shown without it)

    @property
    def is_live(self) -> bool:
        return not self.status.is_finished()


def cancel_local(queue: RunQueue, run_id: int) -> bool:
    """Cancel a run of this process: queued, running, or re-attached after a restart."""
    if queue.cancel(run_id):
        return True
    run = get_active(queue.store.home, run_id)
    if run is not None:
        run.cancel()
        return True
    return False


class Runs:
    def __init__(self, store: Store, queue: RunQueue, folders: DataFolders, remote_runs):
        self.store = store
        self.queue = queue
        self.folders = folders
        self._remote = remote_runs  # Sweeps: who runs a run on a Dask cluster, and cancels it there

    def launch(self, values: dict, label: str | None = None, name: str | None = None) -> int:
        """Admit and queue a run (named ``name`` if given); returns its id. Raises
        ConfigError/DataError."""
        name = check_name(name)  # refused before anything is queued
        launch = admit(self.folders.confined(values), self.store.home)
        run_id = self.queue.submit(launch, label=label).run_id
        if name:
            self.store.set_name(run_id, name)
        return run_id

    def repeat(self, run_id: int, seeds: int = 2) -> list[int]:
        """Launch the run's setting again over ``seeds`` more seeds (the next ones after its
        own, one a run, named as it is), so its run-to-run spread is measured. Raises ConfigError."""
        rec = self.store.get_run(run_id)
        if rec is None:
            raise ConfigError("run", f"there is no run {run_id}")
        if not 1 <= seeds <= MOST_REPEATS:
            raise ConfigError("seeds", f"repeat over 1 to {MOST_REPEATS} more seeds ({seeds} asked)")
        base = {k: v for k, v in rec.config.items() if k in KNOBS}
        taken = {r.config.get("seed") for r in self.store.list_runs()
                 if setting_key(r.config) == setting_key(rec.config)}
        free = list(itertools.islice((s for s in itertools.count(int(base.get("seed") or 0) + 1) if s not in taken),
                                     seeds))
        return [self.launch(dict(base, seed=s), label=f"repeat of run {run_id}", name=rec.name) for s in free]

    def repeats(self, run_ids: list[int]) -> list[list[int]]:
        """The runs among these that repeat one setting over seeds (``noise.repeat_groups``)."""
        return repeat_groups({r.id: r.config for r in self._records(run_ids)})

    def rename(self, run_id: int, name: str | None) -> None:
        """Give a run a name, or take it away (blank). Raises ConfigError for a name
        that breaks ``spec.names``' rule or a run that does not exist."""
        if not self.store.set_name(run_id, name):
            raise ConfigError("run", f"there is no run {run_id}")

    def set_colour(self, run_id: int, colour: str | None) -> None:
        """The colour of a run's lines on every chart ('#RRGGBB'; None: its own again)."""
        try:
            found = self.store.set_colour(run_id, colour)
        except ValueError as e:
            raise ConfigError("colour", str(e)) from None
        if not found:
            raise ConfigError("run", f"there is no run {run_id}")

    def _records(self, run_ids: list[int]) -> list:
        return [r for r in (self.store.get_run(i) for i in run_ids) if r is not None]

    def cancel(self, run_id: int) -> bool:
        return self._remote.cancel_run(run_id) or cancel_local(self.queue, run_id)

    def view(self, run_id: int) -> RunView | None:
        """A live run from its in-memory buffers, a finished one from the store."""
        run = get_active(self.store.home, run_id)
        if run is not None and run.run_id == run_id and not run.is_finished():
            snap = run.snapshot()
            rec = self.store.get_run(run_id)
            return RunView(run_id, snap.status, run.config.to_dict(), snap.summary,
                           snap.samples, snap.events, run.label, run.started_at or 0.0, snap.phase,
                           snap.elapsed_s if snap.status == RunStatus.RUNNING else None,
                           self.queue.position(run_id), run.prediction,
                           name=rec and rec.shown_name, colour=rec and rec.colour)
        rec = self.store.get_run(run_id)
        if rec is None:
            return None
        result = rec.summary
        samples, bad_samples = self.store.read_samples(run_id)
        events, bad_events = self.store.read_events(run_id)
        return RunView(rec.id, rec.status, rec.config, result, [MemorySample(*s) for s in samples], events, rec.label,
                       rec.created_at, None, None, self.queue.position(run_id), result.prediction, rec.host,
                       self._remote.is_remote(rec.sweep_id), rec.shown_name, rec.colour,
                       (*rec.damage, *bad_events, *bad_samples))

    def views(self, run_ids: list[int]) -> list[RunView]:
        return [v for v in (self.view(i) for i in run_ids) if v is not None]

    def history(self) -> list[dict]:
        """One row per run for the history tables: its knobs that matter and its results."""
        rows = []
        tags = self.store.tags()
        for r in self.store.list_runs():
            s = r.summary
            rows.append({
                "id": r.id, "name": r.shown_name, "colour": r.colour, "status": r.status.value,
                "started": r.created_at, "label": r.label or "",
                "dataset": os.path.basename(str(r.config.get("dataset"))), "mode": r.config.get("mode"),
                "model": r.config.get("model"), "changed": changed_knobs_text(r.config),
                "precision": r.config.get("precision"),
                "representation": r.config.get("representation"), "batch_size": r.config.get("batch_size"),
                "threads": r.config.get("threads"), "peak_mb": s.run_peak.mb, "peak_phase": s.peak_phase,
                "accuracy": s.accuracy, "balanced_accuracy": s.balanced_accuracy,
                "baseline_accuracy": s.baseline_accuracy, "samples_per_s": s.samples_per_s, "wall_s": s.wall_s,
                "solver": r.config.get("solver"), "nonzero_weights": s.nonzero_weights,
                "sparse_model_mb": s.sparse_model_bytes / 2**20 if s.sparse_model_bytes is not None else None,
                "cap": s.cap_text, "cap_held_mb": s.cgroup_held_peak_mb, "sweep_id": r.sweep_id, "host": r.host,
                "tags": tags.get(r.id, []), "damage": "; ".join(r.damage),
                # a data-parallel run's largest worker and coordinator beside its run peak (all its processes)
                "largest_worker_mb": par.largest_worker_mb if (par := s.parallel_peaks) else None,
                "coordinator_mb": par.coordinator_mb if par else None})
        return rows

    def differing_knobs(self, run_ids: list[int]) -> dict[str, list]:
        recs = self._records(run_ids)
        values = {k: [read_knob(r.config, k) for r in recs] for k in KNOBS} if len(recs) > 1 else {}
        return {k: vals for k, vals in values.items() if len(set(map(json.dumps, vals))) > 1}

    def baseline_of(self, run_ids: list[int]) -> tuple[int, str] | None:
        """The run to compare these against by default, and why (``pick_baseline``)."""
        return pick_baseline({r.id: r.config for r in recs}) if (recs := self._records(run_ids)) else None

    def compare(self, run_ids: list[int], baseline: int | None = None) -> Comparison:
        """The runs against a baseline (default: ``baseline_of``): each named by what it
        changed against the baseline, its deltas and a one-line headline."""
        recs = self._records(run_ids)
        ids = [r.id for r in recs]
        if baseline not in ids and ids:
            baseline = pick_baseline({r.id: r.config for r in recs})[0]
        names = names_against(ids, self.differing_knobs(ids), baseline)
        facts = [RunFacts(r.id, r.status.value, r.summary, names[r.id], r.shown_name,
                             data_text(r.config.get("dataset"), r.summary, r.config.get("rows"))) for r in recs]
        return compare(facts, baseline, noise_of(facts, {r.id: r.config for r in recs}))

    def changes_against(self, baseline: int, run_ids: list[int]) -> dict[int, str]:
        """What each run changed against ``baseline`` ('stream, batch size 256'), as Compare names it."""
        ids = [baseline] + [i for i in run_ids if i != baseline]
        return names_against(ids, self.differing_knobs(ids), baseline)

    def question_of(self, baseline: int) -> str:
        """The question a story of this baseline asks when the user gives none."""
        cmp = self.compare([baseline], baseline)
        return default_question(cmp.runs[0]) if cmp.runs else ""

    def story(self, baseline: int | None, remedies: list[int], question: str | None = None
              ) -> tuple[Comparison, tuple[Slide, ...]]:
        """A baseline and up to three remedies as a story's slides. Raises ConfigError."""
        check_story(baseline, remedies)
        records = {i: self.store.get_run(i) for i in [baseline, *remedies]}
        missing = [i for i, r in records.items() if r is None]
        if missing:
            raise ConfigError("story", f"there is no run {missing[0]}")
        for r in records.values():
            r.readable("told in a story")
        cmp = self.compare([baseline, *remedies], baseline)
        return cmp, story_slides(cmp, question)

    def tradeoff(self, run_ids: list[int]) -> list[TradeoffPoint]:
        """The runs as trade-off points (exact peak, accuracy, speed; the frontier among them)."""
        return tradeoff_points(self._records(run_ids))

    def tag(self, run_id: int, tag: str, remove: bool = False) -> bool:
        """Tag a run (or remove a tag); False when it already had it (or did not).
        Raises ConfigError for a bad tag or a run that does not exist."""
        tag = check_tag(tag)
        if self.store.get_run(run_id) is None:
            raise ConfigError("run", f"there is no run {run_id}")
        return self.store.tag_run(run_id, tag, remove)

    def export(self, run_ids: list[int], fmt: str = "json") -> bytes:
        records = [run_export(self.store, i) for i in run_ids if self.store.get_run(i) is not None]
        if fmt == "json":
            return json.dumps(records, indent=1).encode()
        out = io.StringIO()
        for i, rec in enumerate(records):
            text = samples_csv(rec)
            out.write(text if i == 0 else text.split("\n", 1)[1])
        return out.getvalue().encode()

    def flamegraph(self, run_id: int) -> bytes:
        """memray's flame graph of a traced run (HTML), made once in its folder."""
        rec = self.store.get_run(run_id)
        if rec is None:
            raise ConfigError("run", f"there is no run {run_id}")
        try:
            with open(traces.flamegraph(rec.run_dir or ""), "rb") as f:
                return f.read()
        except (FileNotFoundError, RuntimeError) as e:
            raise ConfigError("trace", f"run {run_id}: {e}") from None

    def delete(self, run_id: int) -> None:
        rec = self.store.get_run(run_id)
        if rec is None:
            raise ConfigError("run", f"there is no run {run_id}")
        if not rec.status.is_finished():
            raise ConfigError("run", f"run {run_id} is still {rec.status.value}; cancel it first")
        self.store.delete_run(run_id)
        release_leftovers(rec.run_dir, self.store.home, delete_folder=True)


def noise_of(facts: list[RunFacts], configs: dict[int, dict]) -> Noise:
    """The run-to-run noise to judge these runs' deltas by: the measured default, widened to
    the spread of any repeats of one setting among them (completed runs only)."""
    done = {f.id: f for f in facts if f.status == "completed"}
    groups = [[i for i in g if i in done] for g in repeat_groups(configs)]

    def of(figure):
        return [spread(g, [figure(done[i]) for i in g]) for g in groups]

    return measured_noise(of(lambda f: f.compared_peak_mb), of(lambda f: f.summary.samples_per_s),
                          of(lambda f: f.summary.accuracy))


# ---------------------------------------------------------------- the run table

FILTERS = ("dataset", "model", "mode", "sweep_id", "status", "tags")  # what a table can be filtered and grouped by
FILTER_LABELS = {"dataset": "dataset", "model": "model", "mode": "mode", "sweep_id": "sweep", "status": "status",
                 "tags": "tag"}
NO_SWEEP = "no sweep"


def first_shown(rows: list[dict]) -> dict | None:
    """The run a page opened fresh shows: the one running (a queued run behind it has
    nothing to draw yet), else the newest. ``rows``: newest first."""
    return next((r for r in rows if r["status"] == "running"), rows[0] if rows else None)


def cell(row: dict, key: str) -> list[str]:
    """The values of one filterable column of a row, as text (a run has several tags)."""
    if key == "tags":
        return list(row.get("tags") or [])
    if key == "sweep_id":
        return [NO_SWEEP if row.get("sweep_id") is None else f"sweep {row['sweep_id']}"]
    value = row.get(key)
    return ["–" if value in (None, "") else str(value)]


def choices(rows: list[dict], key: str) -> list[str]:
    """Every value of a column among the rows, sorted (sweeps by number)."""
    values = {v for r in rows for v in cell(r, key)}
    return sorted(values, key=lambda v: (v == NO_SWEEP, len(v) if v.startswith("sweep ") else 0, v))


def filter_rows(rows: list[dict], picked: dict[str, list[str]]) -> list[dict]:
    """The rows that match every column's picks (a column with none picked matches all;
    within a column any picked value matches)."""
    return [r for r in rows if all(not want or set(want) & set(cell(r, k)) for k, want in picked.items())]


def group_rows(rows: list[dict], by: str) -> list[dict]:
    """One row per value of ``by``: how many runs, how many completed, their exact peaks
    (lowest and median) and best accuracy; a run with two tags counts in both groups."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        for v in cell(r, by) or ["no tag"]:
            groups.setdefault(v, []).append(r)
    order = choices(rows, by) + ["no tag"]
    out = []
    for value in sorted(groups, key=order.index):
        members = groups[value]
        done = [r for r in members if r["status"] == "completed"]
        peaks = [r["peak_mb"] for r in done if r.get("peak_mb") is not None]
        accs = [r["accuracy"] for r in done if r.get("accuracy") is not None]
        out.append({FILTER_LABELS[by]: value, "runs": len(members), "completed": len(done),
                    "lowest exact peak MiB": min(peaks) if peaks else None,
                    "median exact peak MiB": statistics.median(peaks) if peaks else None,
                    "best accuracy": max(accs) if accs else None,
                    "run ids": ", ".join(str(i) for i in sorted(r["id"] for r in members))})
    return out
