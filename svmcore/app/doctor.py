"""``doctor``: why a run did not fit, and what would.

For a run that ended ``oom``, or whose exact peak is above a budget: the phase that owned
the peak, what held the memory there by the memory model's breakdown for the run's own
config beside the measured per-phase peaks, and every remedy of Learn's list judged
against that phase: those that act on it, ranked by the saving the model predicts (and
Learn's reference measured); those that cannot help, with the reason. For every finished
run (``trouble``), which of three its trouble is: growth pass after pass, a transient peak
in a phase, or a floor held throughout.

Pure: the caller hands in the run record, the calibration (None: the model's parts are
priced at one byte of RSS each, a lower bound, and said so) and the reference. ``fit``
picks its next step from the same ranking.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

from svmcore.app.headlines import change_text, signed
from svmcore.app.noise import NO_SAVING_PCT
from svmcore.app.remedies import BY_KEY, REMEDIES
from svmcore.app.remedy_results import compare
from svmcore.app.remedy_results import rounded as _r
from svmcore.data.sources import FORMAT_WORDS
from svmcore.predict.floors import floor_for
from svmcore.predict.model import (Calibration, Shape, data_shape, parallel_estimate, predict)
from svmcore.spec.registry import DISK_MODES, FLOAT32_STATE_SOLVERS
from svmcore.spec.choices import (
    History, ModelState, Mode, Model, Monitor, Parser, Precision, Representation, Solver, TransformCache,
)
from svmcore.spec.config import DEFAULT_FEATURES, RunConfig, validate
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.units import apart
from svmcore.spec.status import RunStatus
from svmcore.store.records import RunRecord

FLOOR_PART = "libraries' floor"  # the floor among what held the memory
# What held the memory, in the words of the advice, from the model's parts.
HELD = {"data as stored": ("data", "test", "shuffle"),
        "batch in compute form": ("batch", "activations", "transforms", "io", "monitor"),
        "kept while training (a cache, a history)": ("kept",),
        "model and optimiser state": ("model",),
        FLOOR_PART: ("floor",),
        "the run's coordinator": ("coordinator",),
        "its Dask workers (each its own floor, model and rows)": ("Dask workers",),
        "other": ("other",)}
MIN_SAVING_MB = 1.0  # a predicted saving below this is no saving (rounding of the model's parts)

# The cost of each move, as a prior (accuracy points lost, speed rank lost): the measured figures from
# Learn's reference are shown beside it, but its speeds varied 12.5x between identical runs on a shared
# machine (bench/results/remedies.md), too much noise to rank by.
COST = {"logging": (0, 0), "sparse": (0, 0), "threads": (0, 1), "gc": (0, 1), "precision": (0, 0),
        "model_state": (0, 0), "memmap": (0, 1), "batch": (0, 2), "checkpointing": (0, 2), "lean": (0, 1),
        "stream": (0, 3), "model": (2, 0), "hashing": (3, 0), "one-process": (0, 1), "cache": (0, 1),
        "history": (0, 0)}
# Remedies that stop memory growing while training (a cache, a history): ranked before the others that fit
# alike, and taken by fit before it reaches for streaming
STOPS_GROWTH = frozenset(r.key for r in REMEDIES if r.stops_growth)
NARROW_BITS = 14  # data this narrow (2^14 columns or fewer) is not hashed further
FLOAT16_COST = (1, 0)  # float16 storage rounds the values to ~3 digits
# the precision remedy's next step down, and the logging remedy's
NARROWER = {Precision.FLOAT64: Precision.FLOAT32, Precision.FLOAT32: Precision.FLOAT16}
QUIETER = {Monitor.FULL: Monitor.LIGHT, Monitor.LIGHT: Monitor.OFF}

NOT_FOR_ONE_RUN = {
    "ftrl": "FTRL keeps two float64 arrays per feature, as averaged SGD does: measured, it does not lower the peak",
    "compiled": "the compiled parser and solver are for speed: outside the lean path they keep the floor",
    "ddp": "data parallelism spreads the rows over several processes, each with its own floor and model copy; "
           "it does not lower one process's peak on this machine",
    "serve": "serving a trained model in a lean process lowers the memory of scoring, not of training: the "
             "training run's own peak is what it was",
    "distill": "distillation lowers the memory of serving, not of training: the distilled run holds the teacher "
               "and the student at once",
    "pool": "reusing batch buffers saves nothing measurable (bench/results/memory-pool.md): the allocator already "
            "reuses a freed batch's blocks",
}


@dataclass(frozen=True)
class Move:
    """One step a remedy takes from a config: the knobs it changes (None: it cannot
    apply here, and ``reason`` says why)."""

    key: str
    title: str
    acts_on: tuple[str, ...]
    change: dict | None
    reason: str = ""

    @property
    def cost(self) -> tuple[int, int]:
        if self.key == "precision" and (self.change or {}).get("precision") == Precision.FLOAT16:
            return FLOAT16_COST
        return COST.get(self.key, (5, 5))


@dataclass(frozen=True)
class Option:
    """One remedy judged against the phase that owns the peak: the memory model's figures
    when it acts there (``predicted_*``, ``fits``, ``cost``), else ``why`` it cannot help."""

    remedy: str
    title: str
    acts_on: tuple[str, ...]
    change: dict | None
    measured: dict | None  # what Learn's reference measured for it (``measured_saving``)
    why: str | None = None
    predicted_peak_before_mb: float | None = None
    predicted_peak_after_mb: float | None = None
    predicted_saving_mb: float | None = None
    predicted_phase_saving_mb: float | None = None
    predicted_peak_phase_after: str | None = None
    fits: bool | None = None
    cost: tuple[int, int] | None = None
    stops_growth: bool | None = None  # True: it ends memory that grows while training

    def to_dict(self) -> dict:
        """As the diagnosis carries it (JSON, the run panel): the judged fields only."""
        out = {k: v for k, v in dataclasses.asdict(self).items() if v is not None or k in ("change", "measured")}
        return {**out, "acts_on": list(self.acts_on), **({"cost": list(self.cost)} if self.cost else {})}


LEAN = ("lean", "The lean path", ("imports", "prepare", "load", "train", "evaluate"))
# A data-parallel run's processes together (its coordinator and every Dask worker): a budget or a
# cgroup cap (which holds the whole tree) judges this figure, not the coordinator's phases.
ALL_PROCESSES = "all processes"
ONE_PROCESS = ("one-process", "One process instead of Dask workers", (ALL_PROCESSES,))


def moves(cfg: RunConfig, width: int | None = None, file_format: str = "") -> list[Move]:
    """The step each memory remedy would take from ``cfg`` (``width``: the data's columns,
    for hashing; ``file_format``: its file's format, for the lean path), or why it cannot."""
    out = [_checked(Move(r.key, r.title, r.acts_on, *_step(r.key, cfg, width)), cfg)
           for r in REMEDIES if r.key not in NOT_FOR_ONE_RUN]
    why_not = lean_out_of_reach(cfg, file_format)
    out.append(_checked(Move(*LEAN, None if why_not else LEAN_CHANGE, why_not or ""), cfg))
    out.append(_checked(Move(*ONE_PROCESS, {"workers": 1} if cfg.workers > 1 else None,
                             "" if cfg.workers > 1 else "the run is one process already"), cfg))
    return out


LEAN_CHANGE = {"mode": Mode.STREAM, "parser": Parser.NATIVE, "solver": Solver.NATIVE,
               "representation": Representation.SPARSE, "hashing_bits": 0}


def lean_out_of_reach(cfg: RunConfig, file_format: str = "") -> str | None:
    """Why the lean path (a floor of about 30 MiB, numpy and the native library only) is not
    for this run, or None when it is. ``file_format``: the data file's, as read."""
    if cfg.lean:
        return "the run already takes it"
    if cfg.is_builtin:
        return f"it reads svmlight files only, and {cfg.dataset} is a built-in dataset"
    if cfg.model != Model.LINEAR_SVM:
        return f"it trains linear-svm only, not {cfg.model}"
    if file_format and file_format != "svmlight":
        return (f"it reads svmlight files only, and {os.path.basename(cfg.dataset)} is "
                f"{FORMAT_WORDS.get(file_format, file_format)} by its content")
    return None


def _step(key: str, cfg: RunConfig, width: int | None) -> tuple[dict | None, str]:
    depth = len(cfg.hidden_sizes)
    columns = width or cfg.features or DEFAULT_FEATURES.get(cfg.dataset, 1 << 20)
    bits = cfg.hashing_bits or (max(2, columns) - 1).bit_length()
    steps = {
        "batch": ({"batch_size": max(256, cfg.batch_size // 4)}, "") if cfg.batch_size > 256
        else (None, f"the batch is already {cfg.batch_size:,} rows"),
        "sparse": ({"representation": Representation.SPARSE}, "") if cfg.representation == Representation.DENSE
        else (None, "the rows are already sparse"),
        "checkpointing": ({"checkpoint": max(2, round(math.sqrt(depth)))}, "")
        if cfg.model == Model.MLP_NUMPY and depth >= 2 and cfg.checkpoint == 0
        else (None, "only the numpy MLP with two or more hidden layers has activations to checkpoint"
              if cfg.model != Model.MLP_NUMPY or depth < 2 else "checkpointing is already on"),
        "stream": ({"mode": Mode.STREAM}, "") if cfg.mode != Mode.STREAM else (None, "the run already streams"),
        "memmap": ({"mode": Mode.MEMMAP}, "") if cfg.mode == Mode.MEMORY
        else (None, f"the data is already read from disk ({cfg.mode} mode)"),
        "precision": ({"precision": NARROWER[cfg.precision]}, "") if cfg.precision in NARROWER
        else (None, "the values are already stored as float16"),
        "logging": ({"monitor": QUIETER[cfg.monitor]}, "") if cfg.monitor in QUIETER
        else (None, "monitoring is already off"),
        "threads": ({"threads": 1}, "") if cfg.threads > 1 else (None, "the run already uses one thread"),
        "gc": ({"gc_every": 10}, "") if not cfg.gc_every else (None, "gc.collect already runs"),
        "hashing": ({"hashing_bits": min(18, bits - 2)}, "") if bits > NARROW_BITS
        else (None, f"the columns are already folded to 2^{bits}") if cfg.hashing_bits
        else (None, f"the data has {columns:,} columns, never hashed: hashing folds wide data (more than "
                    f"2^{NARROW_BITS} columns) into fewer"),
        "model": ({"model": Model.KERNEL_APPROX}, "") if cfg.model == Model.KERNEL_SVM
        else (None, "the model is not the exact kernel SVM"),
        "model_state": _float32_state(cfg),
        "cache": ({"transform_cache": TransformCache.DISK}, "") if cfg.transform_cache == TransformCache.MEMORY
        else (None, "no cache of transformed rows is held in memory"),
        "history": ({"history": History.NONE}, "") if cfg.history != History.NONE
        else (None, "no history of batch arrays is kept"),
    }
    return steps[key]


def _float32_state(cfg: RunConfig) -> tuple[dict | None, str]:
    """The model state remedy's step: float32 state, with a solver that keeps it where the run's does
    not (the native one, whose floor is the lowest), for a linear model."""
    if not (cfg.model_entry.linear or cfg.distill):
        return None, f"{cfg.model} has no linear model's state (its weights follow the precision knob)"
    if cfg.model_state == ModelState.FLOAT32:
        return None, "the model's state is already float32"
    if cfg.solver in FLOAT32_STATE_SOLVERS:
        return {"model_state": ModelState.FLOAT32}, ""
    return {"model_state": ModelState.FLOAT32, "solver": Solver.NATIVE}, ""


def _checked(m: Move, cfg: RunConfig) -> Move:
    """The move, or the move marked inapplicable when its config does not validate."""
    if m.change is None:
        return m
    try:
        validate(cfg.to_dict(), **m.change)
    except SvmcoreError as e:
        return Move(m.key, m.title, m.acts_on, None, f"not valid here: {e}")
    return m


def apply(cfg: RunConfig, move: Move) -> RunConfig:
    return validate(cfg.to_dict(), **move.change)


# ---------------------------------------------------------------- the model's view

def model_view(cfg: RunConfig, cal: Calibration | None, shape: Shape | None = None,
               cache_dir: str | None = None) -> dict:
    """Per phase the predicted exact peak (MiB) and its parts, including the floor.
    Calibrated when ``cal`` is given; else each part at one byte of RSS per byte on the
    reference floor, a lower bound (``basis`` says which)."""
    shape = shape or data_shape(cfg, cache_dir)
    floor, floor_basis = floor_for(cfg, cal)
    fc = predict(cfg, cal, shape)
    above = 0.0 if cal is not None else floor  # a lower bound is the parts alone: the floor comes on top
    phases = {ph: {"mb": round(mb + above, 1), "parts_mb": {"floor": round(floor, 1), **fc.phase_parts.get(ph, {})}}
              for ph, mb in {"imports": 0.0, **fc.phases_mb}.items()}
    basis = ("the memory model, calibrated on this machine" if cal is not None else
             f"a lower bound of the memory model: not calibrated, each part at one byte per byte, the floor "
             f"{floor_basis}; calibrate for a forecast")
    if cfg.workers > 1:  # every process of the run at once: its coordinator's peak phase, and each worker's peak
        par = parallel_estimate(cfg, shape, max(v["mb"] for v in phases.values()))
        phases[ALL_PROCESSES] = {"mb": par.total_mb, "parts_mb": {
            "coordinator": par.coordinator_mb, "Dask workers": round(par.total_mb - par.coordinator_mb, 1)}}
    peak_phase = max(phases, key=lambda p: phases[p]["mb"])
    return {"peak_mb": phases[peak_phase]["mb"], "peak_phase": peak_phase, "phases": phases, "basis": basis,
            "width": shape.width, "format": shape.file_format, "floor_mb": floor, "floor_basis": floor_basis,
            "calibrated": cal is not None}


def held(parts_mb: dict) -> dict[str, float]:
    """The parts folded into what the advice names: data, batch, model, floor."""
    return {name: round(sum(parts_mb.get(k, 0.0) for k in keys), 1) for name, keys in HELD.items()
            if sum(parts_mb.get(k, 0.0) for k in keys) >= 0.05}


# ---------------------------------------------------------------- measured on Learn

def measured_saving(remedy_key: str, reference: dict | None, change: dict | None = None) -> dict | None:
    """What Learn's reference measured for a remedy: of its experiments that make the
    same change as ``change`` (all of them if none does), the one that saved the most of
    the phases it acts on, as the saving of the run's exact peak, the change in speed and
    balanced accuracy. None when it was never measured."""
    r = BY_KEY.get(remedy_key)
    pairs = (reference or {}).get(remedy_key) or {}
    same = {e.key for e in (r.experiments if r else ()) if change and e.after == change}
    best = None
    for key, pair in pairs.items():
        cmp = compare(pair["before"], pair["after"], r.acts_on) if r else None
        if not cmp or cmp.get("peak_saving_pct") is None:
            continue
        score = cmp.get("phase_saving_pct") if cmp.get("phase_saving_pct") is not None else cmp["peak_saving_pct"]
        score += 1000 if key in same else 0
        if best is None or score > best[0]:
            title = next((e.title for e in r.experiments if e.key == key), key)
            best = (score, {"experiment": title, "peak_before_mb": cmp["peak_before_mb"],
                            "peak_after_mb": cmp["peak_after_mb"], "peak_saving_pct": _r(cmp["peak_saving_pct"]),
                            "phase_saving_pct": _r(cmp.get("phase_saving_pct")),
                            "speed_change_pct": _r(cmp.get("speed_change_pct")),
                            "balanced_accuracy_change": _r(cmp.get("balanced_accuracy_change"), 4),
                            "machine": "reference"})
    return best[1] if best else None


def _a(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


# ---------------------------------------------------------------- the options

def options(cfg: RunConfig, owner: str, before: dict, budget_mb: float | None, cal: Calibration | None,
            reference: dict | None, cache_dir: str | None = None, misses: dict[str, Miss] | None = None,
            exclude: frozenset[str] = frozenset()) -> tuple[list[Option], list[Option]]:
    """(remedies that act on ``owner``, ranked; remedies that cannot help, with why).

    ``before`` is ``model_view(cfg)``. ``misses`` corrects the model where a measured run
    showed it short, per phase (``Miss``). Ranked: those
    predicted to bring the whole run within ``budget_mb`` first, cheapest first (accuracy,
    then speed); then the rest by the predicted saving of the run's peak. ``exclude``:
    configs (JSON) already tried, which are said to be tried."""
    helps, useless = [], []
    shapes: dict[int, Shape] = {}
    for m in moves(cfg, before.get("width"), before.get("format", "")):
        row = Option(m.key, m.title, m.acts_on, m.change, measured_saving(m.key, reference, m.change))
        if m.change is None:
            useless.append(dataclasses.replace(row, why=m.reason))
            continue
        if owner not in m.acts_on and not (owner == "imports" and m.key == "lean"):
            useless.append(dataclasses.replace(row, why=f"does not lower {_a(owner)} {owner}-phase peak (it acts on "
                                                        f"{', '.join(m.acts_on)})"))
            continue
        after_cfg = apply(cfg, m)
        if after_cfg.to_json() in exclude:
            useless.append(dataclasses.replace(row, why="already tried"))
            continue
        shape = shapes.get(after_cfg.hashing_bits) if m.key != "lean" else None
        try:
            after = model_view(after_cfg, cal, shape, cache_dir)
        except SvmcoreError as e:
            useless.append(dataclasses.replace(row, why=f"cannot be priced here: {e}"))
            continue
        if m.key != "lean":
            shapes.setdefault(after_cfg.hashing_bits, data_shape(after_cfg, cache_dir))
        b_phase = corrected(owner, before, misses) if owner in before["phases"] else 0.0
        a_phase = corrected(owner, after, misses) if owner in after["phases"] else 0.0
        b_peak, a_peak = corrected_peak(before, misses), corrected_peak(after, misses)
        row = dataclasses.replace(
            row, predicted_peak_before_mb=round(b_peak, 1), predicted_peak_after_mb=round(a_peak, 1),
            predicted_saving_mb=round(b_peak - a_peak, 1), predicted_phase_saving_mb=round(b_phase - a_phase, 1),
            predicted_peak_phase_after=after["peak_phase"], fits=budget_mb is not None and a_peak <= budget_mb,
            cost=m.cost, stops_growth=m.key in STOPS_GROWTH or None)
        if row.predicted_phase_saving_mb < MIN_SAVING_MB:
            useless.append(dataclasses.replace(row, why=f"acts on the {owner} phase, but the memory model predicts no "
                                                        f"saving there for this config "
                                                        f"({row.predicted_phase_saving_mb:+.1f} MiB)"))
            continue
        helps.append(row)
    for key, why in NOT_FOR_ONE_RUN.items():
        r = BY_KEY.get(key)
        useless.append(Option(key, r.title, tuple(r.acts_on), None, measured_saving(key, reference), why=why))
    helps.sort(key=lambda r: (0, not r.stops_growth, *r.cost, -r.predicted_saving_mb) if r.fits
               else (1, not r.stops_growth, -r.predicted_saving_mb, *r.cost))
    return helps, useless


def lowering(helps: list[Option]) -> list[Option]:
    """Of ``options``' remedies, those whose forecast lowers the run's peak (by at least
    ``MIN_SAVING_MB``: one that lowers its phase while another phase holds or takes the peak
    is no step), in the order ``fit`` takes them: predicted to fit, those that stop growth
    first, then cheapest first; then those that keep accuracy (those that stop growth first),
    largest saving first; then the rest, largest saving first."""
    down = [o for o in helps if o.predicted_saving_mb >= MIN_SAVING_MB]
    return sorted(down, key=lambda o: (0, not o.stops_growth, *o.cost, -o.predicted_saving_mb) if o.fits
                  else (1, o.cost[0], not o.stops_growth, -o.predicted_saving_mb, o.cost[1]))


@dataclass(frozen=True)
class Miss:
    """How far the memory model fell short of a measured phase: its parts above the floor
    times ``ratio`` where the miss is in proportion to them (the parts cost more per byte
    than calibrated), else ``extra_mb`` added: something it does not price, which no remedy
    of those parts takes away (1 MiB priced and 12 measured is no 12x)."""

    ratio: float = 1.0
    extra_mb: float = 0.0

    def applied(self, floor: float, mb: float) -> float:
        return floor + (mb - floor) * self.ratio + self.extra_mb

    def merged(self, other: "Miss") -> "Miss":
        return Miss(max(self.ratio, other.ratio), max(self.extra_mb, other.extra_mb))

    def words(self) -> str:
        """'x1.12' or '+12 MiB'; '' for no miss."""
        if self.extra_mb >= 0.5:
            return f"+{self.extra_mb:,.0f} MiB"
        return f"x{self.ratio:.2f}" if self.ratio > 1.01 else ""


# A measured phase at most this many times what the model priced above the floor is a miss in proportion to
# the priced parts; beyond it, something the model does not price (an import, a copy), which is added as is.
PROPORTIONAL_MISS = 1.5


def measured_miss(phase: dict, measured_mb: float | None) -> Miss:
    """How far the model fell short in a phase (``model_view``'s) that a run measured at
    ``measured_mb``. An oom run's measured peak is a lower bound of what it needed."""
    floor = phase["parts_mb"].get("floor", 0.0)
    priced = phase["mb"] - floor
    if measured_mb is None or measured_mb <= phase["mb"]:
        return Miss()
    if priced > 0 and measured_mb - floor <= priced * PROPORTIONAL_MISS:
        return Miss(ratio=(measured_mb - floor) / priced)
    return Miss(extra_mb=measured_mb - phase["mb"])


def corrected(name: str, view: dict, misses: dict[str, Miss] | None) -> float:
    """A phase's forecast (MiB) corrected by the miss a measured run showed there."""
    phase = view["phases"][name]
    floor = phase["parts_mb"].get("floor", view["phases"]["imports"]["mb"])
    return (misses or {}).get(name, Miss()).applied(floor, phase["mb"])


def corrected_peak(view: dict, misses: dict[str, Miss] | None) -> float:
    return max(corrected(name, view, misses) for name in view["phases"])


def corrected_owner(view: dict, misses: dict[str, Miss] | None) -> str:
    return max(view["phases"], key=lambda name: corrected(name, view, misses))


# ---------------------------------------------------------------- which trouble

PEAK, GROWTH, FLOOR = "transient peak", "growth", "floor"
HORIZON_PASSES = 1000  # a limit further than this many passes away is not met


def trouble(rec: RunRecord, owner: str | None, owner_mb: float | None, limit: tuple[str, float] | None) -> dict:
    """Which of three the run's trouble is, with the figures that decide it (``kind`` None when
    they cannot): ``growth``, its retained memory rising pass after pass (``spec.growth``: a
    cache or a leak), with the pass in which it meets ``limit`` ((name, MiB): the cap or the
    budget); else a ``transient peak``, the owning phase's exact peak more than run-to-run noise
    (``noise.NO_SAVING_PCT``) above what the run retained after its last pass (a batch problem:
    memory held for a moment); else a ``floor``, the peak within that of what it held steadily
    (the libraries, the data and the model at their size), which no knob acting on a moment moves."""
    s = rec.summary
    g = s.growth
    out = {"kind": None, "growth": g.text() if g is not None else "retained memory not recorded (a run stored "
                                                                   "before it was)"}
    if g is not None and g.grows:
        out.update(kind=GROWTH, per_pass_mb=round(g.per_pass_mb, 1), passes=g.passes)
        out["reach"] = _reach_words(rec, g, limit)
        return out
    last = s.passes[-1].all_rss_mb if s.passes else None
    if last is None or owner_mb is None:
        if s.passes is not None:
            out["why_unknown"] = "the run ended before its first pass did: what it retains is not known"
        return out
    above = owner_mb - last
    out.update(retained_mb=round(last, 1), peak_mb=round(owner_mb, 1), above_mb=round(above, 1))
    if above / owner_mb * 100 >= NO_SAVING_PCT:
        out.update(kind=PEAK, words=f"a transient peak in {owner}: its exact peak of {owner_mb:,.0f} MiB is "
                                    f"{above:,.0f} MiB above the {last:,.0f} MiB the run retained after its last pass "
                                    "(memory held for a moment: a batch problem)")
    else:
        floor = f", {s.floor_mb:,.0f} MiB of it the libraries' floor" if s.floor_mb else ""
        out.update(kind=FLOOR, words=f"a floor: the exact peak of {owner_mb:,.0f} MiB is within {NO_SAVING_PCT:g}% of "
                                     f"the {last:,.0f} MiB the run still held after its last pass{floor}: what it "
                                     "holds throughout (the libraries, the data and the model at their size), which "
                                     "no knob acting on a moment (batch size, gc, monitoring) moves")
    return out


def _reach_words(rec: RunRecord, g, limit: tuple[str, float] | None) -> str:
    """'+12.0 MiB a pass: the 300 MiB cap is reached in pass 9' and its like: the run's exact peak
    after its last pass, raised by the growth per pass."""
    s = rec.summary
    rate = f"{g.per_pass_mb:+.1f} MiB a pass ({g.lo_mb:.1f} to {g.hi_mb:.1f} over {g.passes} passes)"
    if limit is None:
        return f"{rate}; no cap or budget to meet (give --budget to see when it would)"
    name, mb = limit
    if rec.status == RunStatus.OOM and s.phase == "train":
        return f"{rate}: the {mb:,.0f} MiB {name} was reached in pass {g.passes + 1}, where the run ran out of memory"
    k = g.reaching(mb, s.run_peak.mb or 0.0)
    epochs = rec.config.get("epochs") or g.passes
    if k <= 1:
        return f"{rate}: the run was above the {mb:,.0f} MiB {name} from its first pass, before it grew"
    if k - g.passes > HORIZON_PASSES:
        return f"{rate}: the {mb:,.0f} MiB {name} is not reached within {HORIZON_PASSES:,} more passes"
    tail = (f", beyond the run's {epochs} passes" if k > epochs else
            f", one of the run's own {epochs} passes" if k <= g.passes else "")
    return f"{rate}: the {mb:,.0f} MiB {name} is reached in pass {k}{tail}"


def growth_remedies(cfg: RunConfig, reference: dict | None) -> list[dict]:
    """The remedies that stop accumulation (``Remedy.stops_growth``) that apply to ``cfg``,
    cheapest first, each with the accumulation it stops and what Learn measured of it."""
    found = [(m, r) for m in moves(cfg) for r in [BY_KEY.get(m.key)] if m.change is not None and r and r.stops_growth]
    return [{"remedy": m.key, "title": m.title, "change": m.change, "stops": r.stops_growth, "cost": list(m.cost),
             "measured": measured_saving(m.key, reference, m.change)}
            for m, r in sorted(found, key=lambda mr: mr[0].cost)]


# ---------------------------------------------------------------- one run

def diagnose(rec: RunRecord, budget_mb: float | None, cal: Calibration | None, reference: dict | None,
             cache_dir: str | None = None) -> dict:
    """The diagnosis of one finished run (plain data; ``text`` renders it). ``budget_mb``
    defaults to an oom run's cap."""
    s = rec.readable("diagnosed").summary
    peak = s.run_peak  # a data-parallel run: all its processes, its largest worker named
    cfg = validate(rec.config)
    budget = budget_mb if budget_mb is not None else (s.cap_mb if rec.status == RunStatus.OOM else None)
    # the phase that owned the peak, and its exact peak: where an oom run died (its last reading), else the peak's
    owner = s.phase if rec.status == RunStatus.OOM and s.phase else s.peak_phase
    owner_mb = s.phase_peak(owner) if owner else None
    measured = {p.name: _r(p.peak_rss_mb) for p in s.phases}
    if peak.parallel is not None and not peak.exact:  # its processes together own the peak a budget judges
        owner, owner_mb = ALL_PROCESSES, peak.mb
        measured[ALL_PROCESSES] = _r(peak.mb)
    out = {"run_id": rec.id, "status": rec.status.value, "budget_mb": budget, "peak_mb": _r(peak.mb),
           "cap": s.cap, "cap_mb": s.cap_mb, "owner": owner, "owner_mb": _r(owner_mb), "measured_phases_mb": measured,
           "floor_mb": _r(s.floor_mb)}
    place = "" if owner == ALL_PROCESSES else f" in {owner}"  # all processes: the peak's own words say so
    if rec.status == RunStatus.OOM:
        out["verdict"] = (f"run {rec.id} ran out of memory{place} at {peak.text()}"
                          + (f" under {'an' if s.cap == 'rlimit' else 'a'} {s.cap} cap of {s.cap_mb:,.0f} MiB"
                             if s.cap_mb else ""))
    elif rec.status == RunStatus.COMPLETED and budget is not None and (peak.mb or 0) > budget:
        shown, limit, over = apart(peak.mb, budget)
        what = peak.text() if peak.parallel else f"{shown} MiB"  # a data-parallel run: its processes, named
        out["verdict"] = f"run {rec.id} peaked at {what}{place}, {over} MiB above the budget of {limit} MiB"
    elif rec.status == RunStatus.COMPLETED:
        out["verdict"] = (f"run {rec.id} completed at {peak.text()}"
                          + (f", within the budget of {budget:,.0f} MiB" if budget is not None else
                             "; give a budget (--budget) to see what would bring it lower"))
        out["healthy"] = True
    else:
        out["verdict"] = f"run {rec.id} ended {rec.status.value}: {s.error_message or 'no memory diagnosis'}"
        out["healthy"] = True
    limit = ("budget", budget_mb) if budget_mb is not None else ("cap", s.cap_mb) if s.cap_mb else None
    out["trouble"] = trouble(rec, owner, owner_mb, limit)
    if out["trouble"]["kind"] == GROWTH:
        out["growth_remedies"] = growth_remedies(cfg, reference)
    if s.trace is not None:
        out["sites"] = traced_sites(s, owner)
        if out["trouble"]["kind"] == GROWTH:
            out["grew_lines"] = s.trace.grew_lines(top=5)
    if out.get("healthy"):
        return out
    others = {k: v for k, v in measured.items() if k not in ("prepare", "imports") and v is not None}
    if (owner == "prepare" and rec.status == RunStatus.COMPLETED and cfg.mode in DISK_MODES
            and others and budget is not None):
        built = (f"its prepare phase built the on-disk copy of the data ({cfg.mode} mode), which later runs on the "
                 "same data reuse")
        past = max(others, key=others.get)
        if others[past] <= budget:
            out["copy_cached"] = (f"{built}; its other phases peaked at {others[past]:,.0f} MiB, within the budget, "
                                  "so a rerun as is should fit")
        else:  # the copy is built once: what stays above the budget past it is what to act on
            out["copy_once"] = (f"{built}; past it, {past} peaked at {others[past]:,.0f} MiB, above the budget: "
                                f"the remedies act on {past}")
            owner, owner_mb = past, others[past]
            out.update(owner=owner, owner_mb=_r(owner_mb))
    view = model_view(cfg, cal, cache_dir=cache_dir)
    ph = view["phases"].get(owner) or view["phases"][view["peak_phase"]]
    out["model"] = {"basis": view["basis"], "owner_predicted_mb": ph["mb"], "peak_mb": view["peak_mb"],
                    "peak_phase": view["peak_phase"], "parts_mb": {k: v for k, v in ph["parts_mb"].items() if v},
                    "held_mb": held(ph["parts_mb"]), "phases_mb": {k: v["mb"] for k, v in view["phases"].items()}}
    biggest = max(out["model"]["held_mb"].items(), key=lambda kv: kv[1], default=(None, 0))
    out["held_most"] = biggest[0]
    miss = measured_miss(ph, owner_mb)
    out["scale"], out["short_mb"] = round(miss.ratio, 3), round(max(0.0, (owner_mb or 0.0) - ph["mb"]), 1)
    out["miss"] = dataclasses.asdict(miss)
    helps, useless = options(cfg, owner, view, budget, cal, reference, cache_dir, {owner: miss})
    out["remedies"], out["useless"] = [o.to_dict() for o in helps], [o.to_dict() for o in useless]
    return out


def traced_sites(s, owner: str | None, top: int = 5) -> dict:
    """A traced run's top lines at its owning phase's traced peak (the run's, if that phase has
    none), and the line that reconciles the traced heap with the exact peak."""
    at = s.trace.at(owner) or s.trace.at(None)
    return {"phase": at.phase if at else None, "traced_mb": _r(at.traced_bytes / 2**20) if at else None,
            "lines": [site.text().strip() for site in at.sites[:top]] if at else [],
            "reconciliation": s.trace.reconciliation(s.peak_rss_mb)}


def _sites_lines(d: dict) -> list[str]:
    sites = d.get("sites")
    if not sites or not sites["lines"]:
        return [f"Allocation sites: {sites['reconciliation']}."] if sites else []
    return ([f"The lines that held the memory at {sites['phase'] or 'the run'}'s traced peak "
             f"({sites['traced_mb']:,.1f} MiB traced by memray):"] + [f"  {line}" for line in sites["lines"]]
            + [f"  ({sites['reconciliation']})"])


# ---------------------------------------------------------------- words

def measured_words(m: dict | None, peak: bool = True) -> str:
    """A remedy as Learn measured it (``measured_saving``): 'measured on Learn (reference, 1M rows):
    peak 400 → 200 MiB (−50%), speed −38%, balanced accuracy −0.002'; without ``peak``, its costs
    alone. '' when there is nothing to say."""
    m, words = m or {}, []
    if m and peak:
        words.append(f"peak {m['peak_before_mb']:,.0f} → {m['peak_after_mb']:,.0f} MiB "
                     f"({signed(-m['peak_saving_pct'], 0)}%)")
    if m.get("speed_change_pct") is not None:
        words.append(f"speed {signed(m['speed_change_pct'], 0)}%")
    if m.get("balanced_accuracy_change") is not None:
        words.append(f"balanced accuracy {signed(m['balanced_accuracy_change'], 3)}")
    return f"measured on Learn ({m['machine']}, {m['experiment']}): {', '.join(words)}" if words else ""


def _miss_words(d: dict) -> str:
    """' (the measured run reached 242: the model is 13 MiB (1.12x) short there, ...)', or ''."""
    miss = Miss(**d.get("miss", {}))
    if not miss.words():
        return ""
    head = f" (the measured run reached {d['owner_mb']:,.0f}: the model is {d['short_mb']:,.0f} MiB"
    if miss.extra_mb:
        return head + (" short there, more than what it prices above the floor can explain: the forecasts below add "
                       "it to this phase)")
    return head + f" ({miss.ratio:.2f}x) short there, and the savings below are corrected by that)"


def trouble_lines(d: dict) -> list[str]:
    """Which of three the trouble is, its figures, and for growth the remedies that stop it."""
    t = d.get("trouble")
    if t is None:
        return []
    lines = [t["growth"][0].upper() + t["growth"][1:] + "."]
    if t["kind"] is None:
        return lines + ([f"Not told whether its trouble is a transient peak, growth or a floor: {t['why_unknown']}."]
                        if t.get("why_unknown") else [])
    if t["kind"] != GROWTH:
        return lines + [f"Its trouble is {t['words']}."]
    lines.append(f"Its trouble is growth, memory retained pass after pass (a cache or a leak): {t['reach']}.")
    lines += [f"The lines that {line.strip()}" if i == 0 else line for i, line in enumerate(d.get("grew_lines", []))]
    if not d.get("growth_remedies"):
        return lines + ["No knob of the list stops this accumulation for this config: it is the code's own (a cache "
                        "or references kept from pass to pass); tracing the run shows the sites that grew."]
    lines.append("Remedies that stop accumulation, cheapest first:")
    lines += [f"  {i}. {r['title']}: {change_text(r['change'])} — stops {r['stops']}; "
              f"{measured_words(r['measured']) or 'not measured on Learn'}"
              for i, r in enumerate(d["growth_remedies"], 1)]
    return lines


def text(d: dict) -> str:
    """The diagnosis in lines, for the terminal and the run panel."""
    lines = [d["verdict"] + "."] + trouble_lines(d) + _sites_lines(d)
    if "model" not in d:
        return "\n".join(lines)
    m = d["model"]
    phases = " · ".join(f"{k} {v:,.0f}" for k, v in d["measured_phases_mb"].items() if v is not None)
    lines.append(f"Measured exact peaks per phase (MiB): {phases}.")
    held_words = ", ".join(f"{k} {v:,.0f} MiB" for k, v in sorted(m["held_mb"].items(), key=lambda kv: -kv[1]))
    lines.append(f"What held the memory in {d['owner']} (by {m['basis']}): {held_words}; "
                 f"{m['owner_predicted_mb']:,.0f} MiB in all"
                 + _miss_words(d) + ".")
    if d.get("copy_cached") or d.get("copy_once"):
        lines.append(f"Note: {d.get('copy_cached') or d['copy_once']}.")
    if m["peak_phase"] != d["owner"]:
        lines.append(f"Past {d['owner']}, the model's highest phase is {m['peak_phase']} at {m['peak_mb']:,.0f} MiB.")
    if d["remedies"]:
        lines.append("Remedies that act on this phase, best first:")
        for i, r in enumerate(d["remedies"], 1):
            fit = " (fits the budget)" if r["fits"] else ""
            fit += " [stops growth]" if r.get("stops_growth") else ""
            lines.append(f"  {i}. {r['title']}: {change_text(r['change'])} — predicted peak "
                         f"{r['predicted_peak_before_mb']:,.0f} → {r['predicted_peak_after_mb']:,.0f} MiB "
                         f"(saves {r['predicted_saving_mb']:,.0f}; {r['predicted_phase_saving_mb']:,.0f} in "
                         f"{d['owner']}){fit}; {measured_words(r['measured']) or 'not measured on Learn'}")
    elif d["owner"] == "imports":
        lines.append(f"The libraries' floor ({m['held_mb'].get(FLOOR_PART, 0):,.0f} MiB; the run reached "
                     f"{d['owner_mb'] or 0:,.0f} MiB importing them) does not fit the budget: no knob lowers what "
                     "Python and the libraries take before any data, except the lean path (native parser and solver "
                     "in stream or memory mode, svmlight files only, a floor of about 29 MiB).")
    else:
        lines.append("No remedy of the list acts on this phase for this config.")
    if d["useless"]:
        lines.append("Useless here:")
        lines += [f"  - {r['title']}: {r['why']}" for r in d["useless"]]
    return "\n".join(lines)

