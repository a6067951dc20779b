"""Charts. Each is a pure ``*_info`` function (a typed view: NamedTuples of plain lists,
tested with ==, as optuna's ``_get_X_info``) and a drawing function that turns it into a
Plotly figure with units on every axis.

A run's memory, throughput and accuracy are drawn stacked on ONE x axis (time since
launch, or samples seen), with the run's phases as bands across all three panels and
one hover line through all of them. Labels live outside the plotting area: phase
names above it, reference lines (exact peak, predicted, cap, floor) in the legend.
"""

from __future__ import annotations

import html
from itertools import pairwise
from typing import NamedTuple, Sequence

import numpy as np
import plotly.graph_objects as go

from svmcore.app.headlines import run_tag
from svmcore.engine.summary import phase_spans, train_pass_ends
from svmcore.spec.events import EVAL, PHASES, PROGRESS, WORKER_MEMORY
from svmcore.spec.result import Forecast, RunSummary
from svmcore.spec.units import MiB

# Distinct at a glance and readable on light and dark backgrounds; neighbours (runs
# of one sweep have consecutive ids) differ in hue the most. 16 colours: a chart of up
# to 16 runs needs no generated ones.
PALETTE = ("#1F77B4", "#FF7F0E", "#2CA02C", "#D62728", "#9467BD", "#17BECF", "#8C564B", "#E377C2",
           "#7F7F7F", "#BCBD22", "#393B79", "#E7BA52", "#FF9896", "#98DF8A", "#C5B0D5", "#AEC7E8")
PHASE_COLOURS = {"imports": "rgba(150,150,150,0.15)", "prepare": "rgba(114,183,178,0.15)",
                 "load": "rgba(245,133,24,0.15)", "transform": "rgba(178,121,162,0.15)",
                 "train": "rgba(76,120,168,0.12)", "distill": "rgba(238,202,59,0.15)",
                 "evaluate": "rgba(84,162,75,0.15)"}
REFERENCE = {"predicted": "#6B6B6B", "cap": "#222222", "floor": "#9A9A9A"}
# a cgroup-capped run's charge, as the memory panel's legend names its two parts
CHARGE_NAMES = {"held": "charged to its cgroup: memory the kernel cannot reclaim",
                "cache": "charged to its cgroup: page cache (reclaimed before any kill)"}
X_TITLES = {"time": "time since launch (s)", "samples": "samples seen"}
Y_TITLES = {"memory": "RSS (MiB)", "throughput": "samples/s", "accuracy": "accuracy"}
PANELS = ("memory", "throughput", "accuracy")
PANEL_WEIGHTS = {"memory": 3.0, "throughput": 1.4, "accuracy": 1.7}
PANEL_GAP = 0.06
MAX_POINTS = 1500  # memory samples drawn per run; more are thinned, keeping each span's highest
LABEL_PX = {"plot_width": 560, "char": 6.3, "pad": 8, "lane": 15}  # phase labels at 11 px, 1024 px window


def chart_text(text: object) -> str:
    """User-given text (a file or run name, a tag, a label built from them) as a chart
    shows it: literally. Plotly reads a subset of HTML in every text it draws (legend,
    hover, title, tick labels), so ``<b>x.svm`` would show bold; and a hovertemplate
    reads ``%{...}``. Plotly turns ``&lt;`` and ``&#37;`` back into ``<`` and ``%``."""
    return html.escape(str(text), quote=False).replace("%", "&#37;")


def run_colour(run_id: int) -> str:
    """A run's own colour when it has none picked: the same on every page."""
    return PALETTE[(run_id - 1) % len(PALETTE)]


def _generated(k: int) -> str:
    """The k-th colour beyond the palette: hues a golden angle apart, mid lightness."""
    import colorsys

    r, g, b = colorsys.hls_to_rgb((0.137 + k * 0.618034) % 1.0, 0.45, 0.65)
    return f"#{round(r * 255):02X}{round(g * 255):02X}{round(b * 255):02X}"


def _lab(colour: str) -> tuple[float, float, float]:
    """'#RRGGBB' in CIELAB (D65), where distance is roughly distance as seen."""
    lin = [((v + 0.055) / 1.055) ** 2.4 if v > 0.04045 else v / 12.92
           for v in (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))]
    xyz = (np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
           / (0.95047, 1.0, 1.08883))
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


# Below this CIELAB distance two colours read as one on a chart: a picked #00AA00 sits
# 16 from the palette's #2CA02C. (The palette's own closest pair, two pale ones, is 17.)
LOOKALIKE = 20.0


def _lookalike(a: str, b: str) -> bool:
    return a == b or float(np.linalg.norm(np.subtract(_lab(a), _lab(b)))) < LOOKALIKE


def chart_colours(run_ids: Sequence[int], picked: dict[int, str | None] | None = None) -> dict[int, str]:
    """A colour for each run on one chart, no two the same (W&B's convention: a run
    keeps its colour on every page). A run keeps the colour picked for it, else its
    own (``run_colour``); a run whose colour another run on the chart already has (runs
    1 and 17, or two runs picked alike), or that looks like a colour picked for another
    run here, takes the next colour of the palette that is free, then generated ones.
    Runs with a picked colour are served first, then by id."""
    picked = {k: v.upper() for k, v in (picked or {}).items() if v}
    taken: set[str] = set()
    chosen: list[str] = []  # the picked colours on this chart: other runs keep clear of them
    out: dict[int, str] = {}
    order = sorted(dict.fromkeys(run_ids), key=lambda i: (i not in picked, i))

    def free(c: str) -> bool:
        return c not in taken and not any(_lookalike(c, p) for p in chosen)

    for rid in order:
        own = picked.get(rid) or run_colour(rid)
        if own not in taken and (rid in picked or free(own)):
            out[rid] = own
        else:
            start = PALETTE.index(own) if own in PALETTE else 0
            ring = [PALETTE[(start + k) % len(PALETTE)] for k in range(len(PALETTE))]
            out[rid] = next((c for c in ring if free(c)), None) or next(
                c for c in map(_generated, range(len(taken) + len(chosen) + 1)) if free(c))
        taken.add(out[rid])
        if rid in picked:
            chosen.append(out[rid])
    return out


def tint(colour: str, alpha: float) -> str:
    """'#1F77B4', 0.3 -> 'rgba(31,119,180,0.3)'."""
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 300) -> go.Figure:
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title=x, yaxis_title=y, legend=dict(orientation="h", y=-0.25), hovermode="x unified")
    return fig


# ---------------------------------------------------------------- one run: its series

class MemoryLine(NamedTuple):
    """A run's sampled memory in MiB at each ``x``: RSS, split into anonymous and file-backed
    pages; under a cgroup cap also its charge, split into ``held`` (what the kernel cannot
    reclaim) and ``cache`` (page cache, reclaimed before any kill), else empty lists."""

    x: list
    rss: list
    anon: list
    file: list
    held: list
    cache: list


class MemoryInfo(NamedTuple):
    """The memory panel of one run (``line.x``: time since launch), its phases and the
    lines drawn across it, in MiB; ``cgroup_peak_mb``: the exact peak of its cgroup's charge."""

    line: MemoryLine
    phases: list[tuple[str, float, float]]
    peak_mb: float | None
    cap_mb: float | None
    cgroup_peak_mb: float | None
    floor_mb: float | None
    predicted_mb: float | None


class ThroughputLine(NamedTuple):
    x: list  # time since launch, or samples seen
    samples_per_s: list


class AccuracyLine(NamedTuple):
    """Held-out accuracy and balanced accuracy at each ``x`` on a sample of ``rows`` rows
    (lists), or the final evaluation on every test row (one value each)."""

    x: list | float | None
    accuracy: list | float
    balanced: list | float | None
    rows: int | None


class AccuracyInfo(NamedTuple):
    """Accuracy while training at samples seen and time since launch, and the final
    evaluation: ``final`` (samples, accuracy, rows), at ``final_t``."""

    samples: list
    t: list
    accuracy: list
    balanced: list
    rows: int | None
    final: tuple | None
    final_t: float | None
    final_balanced: float | None


class Curve(NamedTuple):
    t: list
    rss: list


class WorkerCurve(NamedTuple):
    worker: int
    t: list
    rss: list


class WorkersInfo(NamedTuple):
    """A data-parallel run's Dask workers and the total of all its processes (MiB)."""

    workers: list[WorkerCurve]
    total: Curve


NO_WORKERS = WorkersInfo([], Curve([], []))


class RunSeries(NamedTuple):
    """Everything the stacked chart draws of one run, on one x unit (``x``)."""

    id: int
    name: str
    title: str
    colour: str
    x: str
    mem: MemoryLine
    sampled: int  # memory samples taken
    drawn: int  # of them drawn
    thr: ThroughputLine
    acc: AccuracyLine
    final: AccuracyLine | None
    phases: list[tuple[str, float, float]]
    peak_mb: float | None
    peak_phase: str | None
    cap_mb: float | None
    cap: str | None
    cgroup_peak_mb: float | None
    floor_mb: float | None
    predicted_mb: float | None
    monitor: str
    workers: WorkersInfo
    passes: Curve = Curve([], [])  # the anonymous memory retained at the end of each pass (``pass_marks``)


def memory_info(samples: Sequence, summary: RunSummary, prediction: Forecast | None = None) -> MemoryInfo:
    """The memory panel of one run: sampled RSS split anon/file (and a cgroup-capped run's
    charge), phase bands, the exact peak, the cap, the floor and the predicted peak."""
    prediction = prediction or summary.prediction
    capped = any(s.cgroup_bytes is not None for s in samples)  # a sample whose read failed is a gap
    line = MemoryLine(
        [round(s.t_s, 3) for s in samples], [s.rss_bytes / MiB for s in samples],
        [s.anon_bytes / MiB for s in samples], [s.file_bytes / MiB for s in samples],
        [None if s.held_bytes is None else s.held_bytes / MiB for s in samples] if capped else [],
        [None if s.cgroup_bytes is None else (s.cgroup_cache_bytes or 0) / MiB for s in samples] if capped else [])
    return MemoryInfo(line, [(p.name, p.start_s, p.end_s) for p in summary.phases if p.end_s is not None],
                      summary.peak_rss_mb, summary.cap_mb, summary.cgroup_peak_mb, summary.floor_mb,
                      prediction.predicted_peak_mb if prediction else None)


def throughput_info(events: list[dict], window: int = 3) -> ThroughputLine:
    """samples/s between progress events (moving average over ``window`` intervals), at
    time since launch."""
    prog = [(e["train_elapsed_s"], e["samples"], e["t_s"]) for e in events if e["kind"] == PROGRESS]
    t, rate = [], []
    for i in range(1, len(prog)):
        j = max(0, i - window)
        dt = prog[i][0] - prog[j][0]
        if dt > 0:
            t.append(round(prog[i][2], 3))
            rate.append((prog[i][1] - prog[j][1]) / dt)
    return ThroughputLine(t, rate)


def accuracy_info(events: list[dict]) -> AccuracyInfo:
    """Held-out accuracy and balanced accuracy while training (at samples seen and at
    time since launch), and the final evaluation on every test row apart."""
    ev = [e for e in events if e["kind"] == EVAL and not e.get("final")]
    final = next((e for e in events if e["kind"] == EVAL and e.get("final")), None)
    return AccuracyInfo([e["samples"] for e in ev], [round(e["t_s"], 3) for e in ev], [e["accuracy"] for e in ev],
                        [e.get("balanced_accuracy") for e in ev], ev[0]["rows"] if ev else None,
                        (final["samples"], final["accuracy"], final["rows"]) if final else None,
                        round(final["t_s"], 3) if final else None, final.get("balanced_accuracy") if final else None)


def samples_at(events: list[dict], t: Sequence[float]) -> list[float | None]:
    """Samples seen at each time (linear between progress events), to align runs by work done."""
    prog = [(e["t_s"], e["samples"]) for e in events if e["kind"] == PROGRESS]
    if not prog:
        return [None] * len(t)
    ts, ss = zip(*prog)
    return np.interp(np.asarray(t, dtype=float), ts, ss, left=0.0, right=ss[-1]).tolist()


def thin(values: Sequence[float], most: int = MAX_POINTS) -> list[int]:
    """Indices of the samples to draw: all of them up to ``most``; else the highest of
    each of ``most - 1`` equal spans (so no peak is thinned away) and the last one."""
    n = len(values)
    if n <= most:
        return list(range(n))
    edges = np.linspace(0, n - 1, most).astype(int)
    return [int(a + np.argmax(values[a:b])) for a, b in pairwise(edges) if b > a] + [n - 1]


def run_series(run_id: int, samples: Sequence, events: list[dict], summary: RunSummary, x: str = "time",
               prediction: Forecast | None = None, name: str = "", most: int = MAX_POINTS,
               monitor: str | None = None, colour: str | None = None) -> RunSeries:
    """Everything the stacked chart draws of one run, on one x unit: ``x`` is "time"
    (seconds since launch) or "samples" (samples seen, between progress events).
    ``monitor``: the run's monitor knob (read from its summary when not given);
    ``colour``: its colour on this chart (``chart_colours``; default its own)."""
    mem = memory_info(samples, summary, prediction)
    line = mem.line
    keep = thin(line.rss, most)
    if line.held:  # the charge's highest of each span too: it is what the cap line is about
        keep = sorted(set(keep) | set(thin([(h or 0) + (c or 0) for h, c in zip(line.held, line.cache)], most)))
    line = MemoryLine(*([v[i] for i in keep] if v else [] for v in line))
    thr = throughput_info(events)
    acc = accuracy_info(events)
    final = acc.final
    phases = list(mem.phases)
    if x == "samples":
        mem_x = samples_at(events, line.x)
        thr = thr._replace(x=samples_at(events, thr.x))
        acc_x = acc.samples
        final_x = final[0] if final else None
        ends = samples_at(events, [v for _, a, b in phases for v in (a, b)])
        phases = [(p, ends[2 * i], ends[2 * i + 1]) for i, (p, _, _) in enumerate(phases)
                  if ends[2 * i] is not None and ends[2 * i + 1] > ends[2 * i]]
    else:
        mem_x, acc_x, final_x = line.x, acc.t, acc.final_t
    drawn = [i for i, v in enumerate(mem_x) if v is not None]
    line = MemoryLine([mem_x[i] for i in drawn], *([v[i] for i in drawn] if v else [] for v in line[1:]))
    return RunSeries(
        run_id, name, f"run {run_id}" + (f" · {name}" if name else ""), colour or run_colour(run_id), x, line,
        len(samples), len(drawn), thr, AccuracyLine(acc_x, acc.accuracy, acc.balanced, acc.rows),
        None if final is None else AccuracyLine(final_x, final[1], acc.final_balanced, final[2]),
        phases, mem.peak_mb, summary.peak_phase, mem.cap_mb, summary.cap, mem.cgroup_peak_mb, mem.floor_mb,
        mem.predicted_mb, monitor or summary.monitor or "full",
        # a data-parallel run's workers and total, on the time axis only (they report no samples seen)
        workers_info(samples, events, most) if x == "time" else NO_WORKERS, pass_marks(events, x))


def pass_marks(events: list[dict], x: str = "time") -> Curve:
    """The run's process's anonymous memory (MiB) at the end of each training pass, an exact
    reading, at the pass's end on the chart's ``x`` (seconds since launch, or samples seen)."""
    ends = train_pass_ends(events)
    t = [round(e["t_s"], 3) for e in ends]
    return Curve(samples_at(events, t) if x == "samples" else t, [e["anon_bytes"] / MiB for e in ends])


def workers_info(samples: Sequence, events: list[dict], most: int = MAX_POINTS) -> WorkersInfo:
    """A data-parallel run's Dask workers (sampled at 50 Hz by each worker while it
    trains, time since launch) and the total of all processes: the run's own process
    (the coordinator: the engine's samples) plus each worker held at its last reading
    (a worker counts from its first reading: between epochs it is idle and unsampled).
    Empty lists for a single-process run."""
    curves: dict[int, tuple[list, list]] = {}
    for e in events:
        if e["kind"] != WORKER_MEMORY:
            continue
        start = e["t_s"] - e.get("started_ago_s", 0.0)
        t, r = curves.setdefault(e["worker"], ([], []))
        t.extend(start + d for d in e["dt"])
        r.extend(b / MiB for b in e["rss_bytes"])
    workers = []
    for k in sorted(curves):
        t, r = curves[k]
        keep = thin(r, most)
        workers.append(WorkerCurve(k, [t[i] for i in keep], [r[i] for i in keep]))
    if not workers or not samples:
        return WorkersInfo(workers, Curve([], []))
    ct = np.array([s.t_s for s in samples])
    total = np.array([s.rss_bytes / MiB for s in samples])
    for k in sorted(curves):
        t, r = np.asarray(curves[k][0]), np.asarray(curves[k][1])
        order = np.argsort(t, kind="stable")
        t, r = t[order], r[order]
        i = np.searchsorted(t, ct, side="right") - 1
        total = total + np.where(i >= 0, r[np.clip(i, 0, len(r) - 1)], 0.0)
    keep = thin(list(total), most)
    return WorkersInfo(workers, Curve([float(ct[i]) for i in keep], [float(total[i]) for i in keep]))


def view_series(view, x: str = "time", name: str = "", most: int = MAX_POINTS, colour: str | None = None) -> RunSeries:
    """``run_series`` of a RunView: a live run's phases end 'now', its cap is its knob's.
    ``colour``: its colour on a chart of several runs; default the one picked for it, else its own."""
    colour = colour or view.colour
    monitor = view.config.get("monitor") or "full"
    if not view.is_live:
        return run_series(view.id, view.samples, view.events, view.summary, x, None, name, most, monitor, colour)
    phases = phase_spans(view.events, end_s=view.samples[-1].t_s if view.samples else 0.0)  # the open one ends now
    charged = bool(view.samples) and view.samples[-1].cgroup_bytes is not None  # sampled only under a cgroup cap
    summary = RunSummary(cap_mb=view.config.get("memory_cap_mb") or None, cap="cgroup" if charged else None,
                         phases=phases, floor_mb=next((p.peak_rss_mb for p in phases if p.name == "imports"), None))
    return run_series(view.id, view.samples, view.events, summary, x, view.prediction, name, most, monitor, colour)


def memory_caption(series: RunSeries, why: str | None = None) -> str:
    """What the memory panel of one run draws, in words. A cgroup-capped run draws the
    quantity its cap limits with RSS beside it; ``why`` is the run's own measured sentence
    of why the two differ (``RunSummary.cap_note``), else the general reason is given."""
    thinned = (f"; drawn: {series.drawn:,} of them, each the highest of its span"
               if series.drawn < series.sampled else "")
    rest = ("Shaded bands: the run's phases. Accuracy on a held-out sample while training (dotted: balanced "
            "accuracy); stars: the final evaluation on every test row.")
    if not series.mem.held:
        return (f"Memory: resident set size sampled 50 times a second ({series.sampled:,} samples{thinned}), "
                "stacked as anonymous and file-backed (hatched) pages; the dashed line is the exact peak "
                f"(the kernel's high-water mark). {rest}")
    why = why or ("RSS also counts the library files the worker maps, which other processes read into memory first "
                  "and so are charged to their groups.")
    return (f"Memory: what the kernel charges to the run's cgroup, the quantity its cgroup cap of "
            f"{series.cap_mb:,.0f} MiB limits, sampled 50 times a second ({series.sampled:,} samples{thinned}), "
            "stacked as memory the kernel cannot reclaim and page cache (hatched), which it reclaims before any kill; "
            "the black lines are the cap (solid) and that charge's exact peak (dashed). Beside it, the worker's "
            f"resident set size (RSS; dashed: its exact peak, the kernel's high-water mark). {rest} {why}")


def monitoring_note(series: Sequence[RunSeries], panel: str) -> str | None:
    """What an accuracy or throughput panel says when the runs' monitor knob left it
    without live points (None when some run monitors it)."""
    levels = {s.monitor for s in series}
    if panel == "accuracy" and "full" not in levels:
        return f"monitoring {'/'.join(sorted(levels))}: no live accuracy (final evaluation only)"
    if panel == "throughput" and levels == {"off"}:
        return "monitoring off: no live throughput (the run reports when it ends)"
    return None


# ---------------------------------------------------------------- the stacked chart

def has_data(series: RunSeries, panel: str) -> bool:
    if panel == "memory":
        return bool(series.mem.x)
    if panel == "throughput":
        return bool(series.thr.x)
    return bool(series.acc.x) or series.final is not None


def panels_of(series: Sequence[RunSeries], live: bool = False) -> list[str]:
    """The panels to draw: a live run keeps all three (they fill as it goes); a finished
    one draws only those with data, and nothing when it has no samples at all."""
    if not any(has_data(s, "memory") for s in series):
        return []
    if live:
        return list(PANELS)
    return [p for p in PANELS if any(has_data(s, p) for s in series)]


def panel_domains(panels: Sequence[str], gap: float = PANEL_GAP) -> dict[str, tuple[float, float]]:
    """Each panel's vertical share of the plot (paper coordinates), top to bottom."""
    if not panels:
        return {}
    room = 1.0 - gap * (len(panels) - 1)
    total = sum(PANEL_WEIGHTS[p] for p in panels)
    out, top = {}, 1.0
    for p in panels:
        h = room * PANEL_WEIGHTS[p] / total
        out[p] = (round(max(0.0, top - h), 4), round(top, 4))
        top -= h + gap
    return out


def x_range(series: Sequence[RunSeries], pad: float = 0.02) -> list[float]:
    """The one x range of every panel: from 0 to the last thing drawn, and a little
    room (``pad`` of the width) so a marker at the end is drawn whole."""
    hi = 0.0
    for s in series:
        xs = s.mem.x + s.thr.x + s.acc.x + [b for _, _, b in s.phases]
        if s.final is not None and s.final.x is not None:
            xs.append(s.final.x)
        hi = max([hi] + [v for v in xs if v is not None])
    return [0.0, hi * (1 + pad) if hi > 0 else 1.0]


def label_lanes(phases: Sequence[tuple], lo: float, hi: float, px: dict = LABEL_PX) -> list[tuple]:
    """Where each phase name sits above the plot: (name, centre x, lane, anchor). A name
    goes in the lowest lane where it does not touch the one before it, so short phases
    still read; at the edges it is anchored inwards so it is never cut."""
    span = (hi - lo) or 1.0
    lanes: list[float] = []  # right edge (fraction of the width) of the last label in each lane
    out = []
    for name, x0, x1 in sorted(phases, key=lambda p: (p[1] + p[2]) / 2):
        mid = (x0 + x1) / 2
        c = (mid - lo) / span
        w = (len(name) * px["char"] + px["pad"]) / px["plot_width"]
        anchor, left = ("left", c) if c - w / 2 < 0 else ("right", c - w) if c + w / 2 > 1 else ("center", c - w / 2)
        lane = next((i for i, right in enumerate(lanes) if right <= left), len(lanes))
        if lane == len(lanes):
            lanes.append(0.0)
        lanes[lane] = left + w
        out.append((name, mid, lane, anchor))
    return out


BAND_POINTS = 300


class Band(NamedTuple):
    """Repeats of one setting: their memory's mean and lowest and highest at each ``x`` (MiB)."""

    runs: list[int]
    colour: str
    x: list[float]
    mean: list[float]
    lo: list[float]
    hi: list[float]
    title: str


class StackedInfo(NamedTuple):
    """What the stacked chart draws: its panels and their vertical shares, the one x
    range, the runs, the phase bands of one run (``phases_of``) and their labels' lanes
    (name, centre, lane, anchor), and the bands of repeats among the runs."""

    x: str
    range: list[float]
    panels: list[str]
    domains: dict[str, tuple[float, float]]
    live: bool
    runs: list[RunSeries]
    phases: list[tuple[str, float, float]]
    labels: list[tuple]
    phases_of: int | None
    bands: list[Band]


def band_info(series: Sequence[RunSeries], points: int = BAND_POINTS) -> Band | None:
    """Repeats of one setting (runs alike but their seed) as W&B draws a group: their
    memory on a common x grid, from the start to where the shortest of them ends (so every
    run counts at every point), the mean and the lowest and highest of them, in MiB. None
    when fewer than two of them have samples."""
    drawn = [s for s in series if len(s.mem.x) > 1]
    if len(drawn) < 2:
        return None
    end = min(max(s.mem.x) for s in drawn)
    grid = np.linspace(0.0, end, points)
    curves = np.array([np.interp(grid, s.mem.x, s.mem.rss) for s in drawn])
    ids = [s.id for s in drawn]
    return Band(ids, drawn[0].colour, grid.round(4).tolist(), curves.mean(axis=0).round(3).tolist(),
                curves.min(axis=0).round(3).tolist(), curves.max(axis=0).round(3).tolist(),
                f"runs {', '.join(map(str, ids))}: mean and range")


def stacked_info(series: Sequence[RunSeries], live: bool = False, phases_of: int | None = None,
                 groups: Sequence[Sequence[int]] = ()) -> StackedInfo:
    """What the stacked chart draws: its panels and their heights, the shared x range,
    the phase bands (of one run: the only one, or ``phases_of``) with their labels' lanes,
    and for each group of repeats among the runs (``groups``: run ids) its memory band."""
    series = list(series)
    panels = panels_of(series, live)
    lo, hi = x_range(series)
    owner = next((s for s in series if s.id == phases_of), series[0] if len(series) == 1 else None)
    phases = owner.phases if owner else []
    bands = [b for b in (band_info([s for s in series if s.id in set(g)]) for g in groups) if b]
    return StackedInfo(series[0].x if series else "time", [lo, hi], panels, panel_domains(panels), live, series,
                       phases, label_lanes(phases, lo, hi), owner.id if owner else None, bands)


def accuracy_range(series: Sequence[RunSeries], pad: float = 0.03) -> list[float] | None:
    """The accuracy panel's range: the accuracies drawn, a little room, never below 0
    nor above 1 (Plotly's own range for one point, or a flat line, ran from 0 to 2)."""
    values = [v for s in series for v in s.acc.accuracy + s.acc.balanced if v is not None]
    values += [v for s in series if s.final for v in (s.final.accuracy, s.final.balanced) if v is not None]
    if not values:
        return None
    lo, hi = min(values), max(values)
    room = max(pad, (hi - lo) * 0.1)
    return [max(0.0, lo - room), min(1.0 + pad / 2, hi + room)]


def _axis_names(panels: Sequence[str]) -> dict[str, str]:
    return {p: "y" if i == 0 else f"y{i + 1}" for i, p in enumerate(panels)}


LEGEND_ROW_PX = 22
LEGEND_PX = {"char": 6.6, "entry": 48}  # a legend entry at 11 px: each character, and its line sample and gap


def legend_grid(titles: Sequence[str], plot_px: float = LABEL_PX["plot_width"]) -> tuple[int, int]:
    """(entries per row, rows) of a legend below a chart of several runs: as many entries
    side by side as the widest title allows in the plot of a 1024 px window, each the
    same share of the width, so that none runs into the next or is cut."""
    if not titles:
        return 1, 0
    widest = max(len(t) for t in titles) * LEGEND_PX["char"] + LEGEND_PX["entry"]
    per_row = max(1, min(len(titles), int(plot_px // widest)))
    return per_row, -(-len(titles) // per_row)


def legend_below(titles: Sequence[str]) -> tuple[dict, int]:
    """A legend of runs in rows below the chart (``legend_grid``), and the extra height
    its rows after the first take."""
    per_row, rows = legend_grid(titles)
    legend = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left",
                  font=dict(size=11), traceorder="normal", entrywidth=1 / per_row, entrywidthmode="fraction")
    return legend, LEGEND_ROW_PX * max(0, rows - 1)


def stacked_figure(info: StackedInfo, height: int = 600) -> go.Figure:
    """Memory over throughput over accuracy, one x axis, phase bands through all three."""
    fig = go.Figure()
    panels = info.panels
    if not panels:
        return fig
    axis = _axis_names(panels)
    lo, hi = info.range
    single = len(info.runs) == 1
    for name, x0, x1 in info.phases:
        for p in panels:
            fig.add_shape(type="rect", xref="x", yref=f"{axis[p]} domain", x0=x0, x1=x1, y0=0, y1=1, layer="below",
                          line_width=0, fillcolor=PHASE_COLOURS.get(name, "rgba(128,128,128,0.1)"))
    for name, mid, lane, anchor in info.labels:
        fig.add_annotation(x=mid, y=1, xref="x", yref="paper", text=name, showarrow=True, arrowhead=0, arrowwidth=1,
                           arrowcolor="#999", ax=0, ay=-(10 + LABEL_PX["lane"] * lane), xanchor=anchor,
                           yanchor="bottom", font=dict(size=11, color="#555"))
    banded = {rid for b in info.bands for rid in b.runs}
    for s in info.runs:
        _draw_run(fig, s, axis, lo, hi, single, faint=s.id in banded)
    if "memory" in axis:
        for b in info.bands:
            _draw_band(fig, b, axis["memory"])
    if single and info.runs[0].floor_mb and "memory" in axis:
        fig.add_shape(type="rect", xref="x domain", yref=axis["memory"], x0=0, x1=1, y0=0,
                      y1=info.runs[0].floor_mb, fillcolor="rgba(128,128,128,0.10)", line_width=0, layer="below")
    for p in panels:  # a panel with nothing drawn yet still gets its subplot (else its axis and texts collapse)
        if not any((getattr(t, "yaxis", None) or "y") == axis[p] for t in fig.data):
            fig.add_trace(go.Scatter(x=[], y=[], yaxis=axis[p], showlegend=False, hoverinfo="skip"))
    for p in panels:
        note = monitoring_note(info.runs, p)
        if note and not any((s.acc if p == "accuracy" else s.thr).x for s in info.runs):
            fig.add_annotation(text=note, showarrow=False, xref="x domain", yref=f"{axis[p]} domain", x=0.5, y=0.5,
                               font=dict(size=12, color="#888"))
        elif info.live and not any(has_data(s, p) for s in info.runs):
            fig.add_annotation(text=f"{Y_TITLES[p]}: drawn from the first training batch on", showarrow=False,
                               xref="x domain", yref=f"{axis[p]} domain", x=0.5, y=0.5,
                               font=dict(size=12, color="#888"))
    lanes = 1 + max((lane for _, _, lane, _ in info.labels), default=-1)
    if single:
        legend, extra = dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left",
                             font=dict(size=11), traceorder="normal"), 0
    else:  # one entry per run, in rows of equal shares (a saved PNG measured names narrower than it drew them)
        legend, extra = legend_below([s.title for s in info.runs] + [b.title for b in info.bands])
    layout = {
        "height": height + extra, "hovermode": "x unified", "hoversubplots": "axis",
        "margin": dict(l=10, r=30, t=16 + LABEL_PX["lane"] * lanes + (10 if lanes else 0), b=10),
        "legend": legend,
        "xaxis": dict(range=[lo, hi], title=dict(text=X_TITLES[info.x], standoff=6), anchor=axis[panels[-1]],
                      hoverformat=".2f" if info.x == "time" else ",.0f", showspikes=True, spikemode="across",
                      spikethickness=1, spikedash="dot", spikecolor="#888", automargin=True),
    }
    for p in panels:
        empty = info.live and not any(has_data(s, p) for s in info.runs)
        key = "yaxis" if axis[p] == "y" else f"yaxis{axis[p][1:]}"
        # an empty live panel keeps its axis (no ticks, no grid): made invisible, its domain collapsed and the
        # two panels' "drawn from the first training batch on" texts were written over each other
        layout[key] = dict(domain=list(info.domains[p]), anchor="x", automargin=True,
                           title=dict(text="" if empty else Y_TITLES[p], standoff=6), showticklabels=not empty,
                           showgrid=not empty, zeroline=not empty,
                           rangemode="tozero" if p != "accuracy" else "normal", fixedrange=False)
        if p == "accuracy" and accuracy_range(info.runs):
            layout[key]["range"] = accuracy_range(info.runs)
    fig.update_layout(**layout)
    return fig


def _line(x, y, **kw) -> go.Scatter:
    return go.Scatter(x=x, y=y, mode="lines", **kw)


def _draw_band(fig: go.Figure, b: Band, y: str) -> None:
    """A group of repeats: its range as a shaded band and its mean as a line, one legend entry."""
    group = {"legendgroup": b.title}
    fig.add_trace(_line(b.x, b.hi, yaxis=y, line=dict(width=0), showlegend=False, hoverinfo="skip", **group))
    fig.add_trace(_line(b.x, b.lo, yaxis=y, line=dict(width=0), fill="tonexty", fillcolor=tint(b.colour, 0.22),
                        showlegend=False, hoverinfo="skip", **group))
    fig.add_trace(_line(b.x, b.mean, yaxis=y, name=chart_text(b.title),
                        line=dict(color=b.colour, width=3), hovertemplate="mean %{y:,.1f} MiB", **group))


def _draw_run(fig: go.Figure, s: RunSeries, axis: dict, lo: float, hi: float, single: bool,
              faint: bool = False) -> None:
    """``faint``: one of a group of repeats, whose band and mean carry it (its own curve thin)."""
    c = s.colour
    # several runs: one legend entry per run toggles all its lines; one run: an entry per line
    common = {} if single else {"legendgroup": f"run {s.id}"}
    if "memory" in axis:
        m, y = s.mem, axis["memory"]
        mib = "%{y:,.1f} MiB"
        if single and m.held:  # a cgroup cap: the quantity it limits, stacked, under its line
            cap = REFERENCE["cap"]
            fig.add_trace(_line(m.x, m.held, name=CHARGE_NAMES["held"], stackgroup="charge", yaxis=y,
                                line=dict(width=0), fillcolor=tint(cap, 0.35), hovertemplate=mib, legendrank=2))
            fig.add_trace(_line(m.x, m.cache, name=CHARGE_NAMES["cache"], stackgroup="charge", yaxis=y,
                                line=dict(width=0), fillcolor=tint(cap, 0.08),
                                fillpattern=dict(shape="/", fgcolor=tint(cap, 0.35), size=6),
                                hovertemplate=mib, legendrank=3))
        elif single:
            fig.add_trace(_line(m.x, m.anon, name="anonymous", stackgroup="rss", yaxis=y, line=dict(width=0),
                                fillcolor=tint(c, 0.30), hovertemplate=mib, legendrank=2))
            fig.add_trace(_line(m.x, m.file, name="file-backed", stackgroup="rss", yaxis=y, line=dict(width=0),
                                fillcolor=tint(c, 0.10), fillpattern=dict(shape="/", fgcolor=tint(c, 0.45), size=6),
                                hovertemplate=mib, legendrank=3))
        par = s.workers
        own = ("the run's process (coordinator) RSS" if par.workers else "total RSS") if single else chart_text(s.title)
        fig.add_trace(_line(m.x, m.rss, name=own, yaxis=y, opacity=0.45 if faint else 1.0,
                            line=dict(color=c, width=1 if faint else 2), hovertemplate=mib, legendrank=1, **common))
        if single:
            for i, w in enumerate(par.workers):
                fig.add_trace(_line(w.t, w.rss, name=f"Dask worker {w.worker} RSS (sampled while training)",
                                    yaxis=y, line=dict(color=PALETTE[(i + 1) % len(PALETTE)], width=1.2),
                                    hovertemplate=mib, legendrank=2))
            if par.workers:
                fig.add_trace(_line(par.total.t, par.total.rss, yaxis=y,
                                    name="all processes (sampled sum; a worker counts from its first task)",
                                    line=dict(color=c, width=2, dash="dashdot"), hovertemplate=mib, legendrank=3))
        if single and s.passes.t:
            fig.add_trace(go.Scatter(x=s.passes.t, y=s.passes.rss, mode="markers", yaxis=y,
                                     name="anonymous memory retained after each pass (exact reading)",
                                     marker=dict(color=c, size=9, symbol="diamond-open", line=dict(width=2)),
                                     hovertemplate="retained %{y:,.1f} MiB", legendrank=3))
        refs = [("peak_mb", "exact peak {:,.0f} MiB", dict(color=c, dash="dash", width=1.5))]
        if single:
            refs += [("predicted_mb", "predicted {:,.0f} MiB",
                      dict(color=REFERENCE["predicted"], dash="dot", width=1.5)),
                     ("cap_mb", f"{s.cap or ''} cap {{:,.0f}} MiB".strip(), dict(color=REFERENCE["cap"], width=2)),
                     ("cgroup_peak_mb", "cgroup exact peak {:,.0f} MiB (what the cap limits)",
                      dict(color=REFERENCE["cap"], dash="dash", width=1.5)),
                     ("floor_mb", "floor {:,.0f} MiB (interpreter + libraries)",
                      dict(color=REFERENCE["floor"], dash="dot", width=1))]
        for rank, (key, text, line) in enumerate(refs, start=4):
            value = getattr(s, key)
            if value:
                fig.add_trace(_line([lo, hi], [value] * 2, name=text.format(value), yaxis=y, line=line,
                                    hoverinfo="skip", showlegend=single, legendrank=rank, **common))
    if "throughput" in axis and s.thr.x:
        fig.add_trace(_line(s.thr.x, s.thr.samples_per_s, name="samples/s", yaxis=axis["throughput"],
                            line=dict(color=c, width=2), hovertemplate="%{y:,.0f} samples/s", showlegend=False,
                            **common))
    if "accuracy" in axis:
        a, y = s.acc, axis["accuracy"]
        if a.x:
            rows = f" (held-out sample, {a.rows:,} rows)" if a.rows else ""
            fig.add_trace(go.Scatter(x=a.x, y=a.accuracy, mode="lines+markers", name=f"accuracy{rows}",
                                     yaxis=y, line=dict(color=c, width=2), marker=dict(size=5),
                                     hovertemplate="accuracy %{y:.4f}", showlegend=single, legendrank=10, **common))
            if any(b is not None for b in a.balanced):
                fig.add_trace(go.Scatter(x=a.x, y=a.balanced, mode="lines", name="balanced accuracy", yaxis=y,
                                         line=dict(color=c, width=2, dash="dot"),
                                         hovertemplate="balanced %{y:.4f}", showlegend=single, legendrank=11,
                                         **common))
        f = s.final
        if f is not None and f.x is not None:
            fig.add_trace(go.Scatter(x=[f.x], y=[f.accuracy], mode="markers", yaxis=y,
                                     name=f"final accuracy (all {f.rows:,} test rows)",
                                     marker=dict(color=c, size=12, symbol="star"), hovertemplate="final %{y:.4f}",
                                     showlegend=single, legendrank=12, **common))
            if f.balanced is not None:
                fig.add_trace(go.Scatter(x=[f.x], y=[f.balanced], mode="markers", yaxis=y,
                                         name="final balanced accuracy",
                                         marker=dict(color=c, size=11, symbol="star-open"),
                                         hovertemplate="final balanced %{y:.4f}", showlegend=single, legendrank=13,
                                         **common))


# ---------------------------------------------------------------- several runs

class PhasePeaks(NamedTuple):
    """One run's exact peak of each phase (None where it had no such phase or was killed
    before its peak was read) and the phase that owns its peak."""

    id: int
    title: str
    colour: str
    peaks: list[float | None]
    owner: str | None


class PhasePeaksInfo(NamedTuple):
    phases: list[str]
    runs: list[PhasePeaks]


def phase_peaks_info(views: Sequence, names: dict[int, str] | None = None,
                     colours: dict[int, str] | None = None) -> PhasePeaksInfo:
    """Exact peak of each phase, per run (None where a run has no such phase or it was
    killed before its peak was read), and the phase that owns each run's peak."""
    names = names or {}
    colours = colours or chart_colours([v.id for v in views])
    seen = {p.name for v in views for p in v.summary.phases}
    phases = [p for p in PHASES if p in seen] + sorted(seen - set(PHASES))
    runs = []
    for v in views:
        peaks = {p.name: p.peak_rss_mb for p in v.summary.phases}
        name = names.get(v.id, "")
        runs.append(PhasePeaks(v.id, f"run {v.id}" + (f" · {name}" if name else ""), colours[v.id],
                               [peaks.get(p) for p in phases], v.summary.peak_phase))
    return PhasePeaksInfo(phases, runs)


def phase_peaks_figure(info: PhasePeaksInfo, height: int = 340) -> go.Figure:
    """Grouped bars: each phase's exact peak side by side per run; the bar of the phase
    that owns a run's peak is outlined and says so."""
    fig = go.Figure()
    for r in info.runs:
        owner = [p == r.owner for p in info.phases]
        title = chart_text(r.title)
        fig.add_trace(go.Bar(
            x=info.phases, y=r.peaks, name=title, marker=dict(
                color=r.colour, line=dict(color=["#111" if o else r.colour for o in owner],
                                             width=[2.5 if o else 0 for o in owner])),
            # upright, one above each bar: side by side they overlapped
            text=["peak" if o else "" for o in owner], textposition="outside", cliponaxis=False, textangle=-90,
            textfont=dict(size=10),
            hovertemplate="%{x}: %{y:,.0f} MiB<extra>" + title + "</extra>"))
    # the runs in rows below the bars, the chart taller by those rows: a column beside them
    # squeezed the bars to 40% of the width with eight runs
    legend, extra = legend_below([r.title for r in info.runs])
    fig.update_layout(barmode="group", height=height + extra,
                      hovermode="closest", margin=dict(l=10, r=10, t=24, b=10), legend=legend,
                      yaxis=dict(title=dict(text="exact peak (MiB)", standoff=6), rangemode="tozero", automargin=True),
                      xaxis=dict(title=dict(text="phase", standoff=6), automargin=True))
    return fig


class Dot(NamedTuple):
    """A completed run on the trade-off chart."""

    run_id: int
    peak_mb: float
    accuracy: float | None
    samples_per_s: float
    label: str


class OomDot(NamedTuple):
    run_id: int
    peak_mb: float
    label: str


class TradeoffInfo(NamedTuple):
    """The trade-off chart: completed runs, those out of memory, the Pareto frontier
    (peak, accuracy) from the lowest peak up, and the budget."""

    done: list[Dot]
    oom: list[OomDot]
    frontier: list[tuple[float, float]]
    budget_mb: float | None


class OomMark(NamedTuple):
    peak_mb: float
    runs: list[str]  # each run's line in the hover


class RepeatMark(NamedTuple):
    """A setting run over several seeds: the mean exact peak and accuracy of its completed
    runs, and their lowest and highest."""

    runs: list[int]
    peak_mb: float
    peak_lo: float
    peak_hi: float
    accuracy: float
    acc_lo: float
    acc_hi: float


class TradeoffAxes(NamedTuple):
    x: list[float] | None
    y: list[float] | None
    budget_in_view: bool
    accuracies: bool


def tradeoff_info(points: Sequence, budget_mb: float | None = None) -> TradeoffInfo:
    done = [p for p in points if p.status == "completed"]
    oom = [p for p in points if p.status == "oom"]
    front = sorted((p for p in done if p.on_frontier), key=lambda p: p.peak_mb)
    return TradeoffInfo(
        [Dot(p.run_id, p.peak_mb, p.accuracy, p.samples_per_s or 0.0, run_tag(p.label, p.name)) for p in done],
        [OomDot(p.run_id, p.peak_mb, run_tag(p.label, p.name)) for p in oom],
        [(p.peak_mb, p.accuracy) for p in front], budget_mb)


def oom_marks(oom: Sequence[OomDot]) -> list[OomMark]:
    """Runs that ran out of memory at the same peak (to the MiB) share one × on the
    trade-off chart, which counts them ("×2") and lists each in its hover."""
    marks: dict[int, OomMark] = {}
    for rid, peak, label in oom:
        m = marks.setdefault(round(peak), OomMark(peak, []))
        m.runs.append(f"run {rid}: {label} (oom at {peak:.0f} MiB)")
    return list(marks.values())


def repeat_marks(points: Sequence, groups: Sequence[Sequence[int]]) -> list[RepeatMark]:
    """Each setting run over several seeds, as one mark on the trade-off chart: the mean
    exact peak and accuracy of its completed runs, and their lowest and highest (W&B's
    grouped runs). Groups with fewer than two completed runs draw nothing."""
    by_id = {p.run_id: p for p in points if p.status == "completed" and p.accuracy is not None}
    out = []
    for g in groups:
        pts = [by_id[i] for i in g if i in by_id]
        if len(pts) < 2:
            continue
        peaks, accs = [p.peak_mb for p in pts], [p.accuracy for p in pts]
        out.append(RepeatMark([p.run_id for p in pts], float(np.mean(peaks)), min(peaks), max(peaks),
                              float(np.mean(accs)), min(accs), max(accs)))
    return out


def _draw_repeats(fig: go.Figure, marks: Sequence[RepeatMark]) -> None:
    fig.add_trace(go.Scatter(
        x=[m.peak_mb for m in marks], y=[m.accuracy for m in marks], mode="markers",
        name="repeats over seeds: mean, bars from lowest to highest",
        marker=dict(symbol="diamond-open", size=13, color="#333", line=dict(width=2)),
        error_x=dict(type="data", symmetric=False, array=[m.peak_hi - m.peak_mb for m in marks],
                     arrayminus=[m.peak_mb - m.peak_lo for m in marks], color="#555", thickness=1.5),
        error_y=dict(type="data", symmetric=False, array=[m.acc_hi - m.accuracy for m in marks],
                     arrayminus=[m.accuracy - m.acc_lo for m in marks], color="#555", thickness=1.5),
        customdata=[", ".join(map(str, m.runs)) for m in marks],
        hovertemplate="runs %{customdata}<br>mean peak %{x:.1f} MiB<br>mean accuracy %{y:.4f}<extra>repeats</extra>"))


def tradeoff_figure(info: TradeoffInfo, labelled: bool = False, colours: dict[int, str] | None = None,
                    repeats: Sequence[RepeatMark] = ()) -> go.Figure:
    """``labelled``: each completed run's id beside its dot (a story's few runs; a
    sweep's many are told apart by hovering). ``colours``: each run's own colour (a story:
    the colour it has on every other slide and page) instead of colouring by throughput.
    ``repeats``: ``repeat_marks`` of the settings run over several seeds."""
    fig = go.Figure()
    if info.done:
        ids, peak, acc, sps, labels = zip(*info.done)
        biggest = max(sps) or 1.0
        by_speed = dict(color=list(sps), colorscale="Viridis", showscale=True, colorbar=dict(title="samples/s"))
        fig.add_trace(go.Scatter(
            x=peak, y=acc, mode="markers+text" if labelled else "markers", name="completed runs",
            showlegend=not colours,  # in each run's own colour, one swatch would name them all wrongly
            marker=dict(size=[10 + 30 * (s / biggest) for s in sps], line=dict(width=1, color="#333"),
                        **(dict(color=[colours[i] for i in ids]) if colours else by_speed)),
            text=[f"run {i}" for i in ids] if labelled else None, textposition="top center",
            hovertext=[chart_text(f"run {i}: {lab}") for i, lab in zip(ids, labels)], customdata=list(sps),
            hovertemplate="%{hovertext}<br>peak %{x:.1f} MiB<br>accuracy %{y:.4f}<br>%{customdata:,.0f} samples/s"))
    if repeats:
        _draw_repeats(fig, repeats)
    if info.frontier:
        fx, fy = zip(*info.frontier)
        fig.add_trace(go.Scatter(x=fx, y=fy, mode="lines", name="Pareto frontier",
                                 line=dict(color="#E45756", width=2, dash="dot", shape="hv")))
    if info.oom:
        lo = min((p.accuracy for p in info.done if p.accuracy is not None), default=0.5)
        marks = oom_marks(info.oom)
        fig.add_trace(go.Scatter(x=[m.peak_mb for m in marks], y=[lo] * len(marks), mode="markers+text",
                                 name="out of memory", marker=dict(symbol="x", size=14, color="#E45756"),
                                 text=[f"×{len(m.runs)}" if len(m.runs) > 1 else "" for m in marks],
                                 textposition="top center", textfont=dict(size=11, color="#E45756"),
                                 customdata=["<br>".join(map(chart_text, m.runs)) for m in marks],
                                 hovertemplate="%{customdata}<extra>out of memory</extra>"))
    axes = tradeoff_axes(info)
    budget = info.budget_mb
    if budget and axes.budget_in_view:
        fig.add_vline(x=budget, line=dict(color="#999", dash="dash"), annotation_text=f"budget {budget:.0f} MiB")
    elif budget and axes.x:  # the axes stay on the data: say where the budget is instead of stretching them
        right = budget > axes.x[1]
        fig.add_annotation(xref="paper", yref="paper", x=1.0 if right else 0.0, y=1.0, showarrow=False,
                           xanchor="right" if right else "left", yanchor="bottom", font=dict(size=11, color="#777"),
                           text=f"budget {budget:.0f} MiB {'→ (above every run)' if right else '← (below every run)'}")
    fig = _layout(fig, "Trade-off: exact peak memory vs accuracy (size" + ("" if colours else " and colour")
                  + ": throughput)", "exact peak RSS (MiB)", "test accuracy", height=460)
    # the axes make room for their labels themselves: a PNG saved by plotly.js (no Streamlit theme)
    # cut the accuracy ticks to "16, 14, 12" and ran the axis title into them
    fig.update_layout(hovermode="closest")
    fig.update_yaxes(automargin=True, tickformat=".3f", title_standoff=8)
    fig.update_xaxes(automargin=True, title_standoff=8)
    if axes.x:
        fig.update_xaxes(range=axes.x, autorange=False)
    if axes.y:
        fig.update_yaxes(range=axes.y, autorange=False)
    if info.oom and not axes.accuracies:  # the × stand on a line of their own, not at an accuracy
        fig.update_yaxes(range=[0, 1], autorange=False, showticklabels=False, showgrid=False,
                         title_text="test accuracy (none: no run completed)")
        fig.add_annotation(xref="paper", yref="paper", x=0.5, y=0.9, showarrow=False, font=dict(size=13),
                           text="No run completed, so none has an accuracy: each × is a run that ran out of "
                                "memory, at its exact peak")
    return fig


def _padded(values: list[float], rel: float, least: float) -> list[float] | None:
    if not values:
        return None
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * rel, least)
    return [lo - pad, hi + pad]


def tradeoff_axes(info: TradeoffInfo) -> TradeoffAxes:
    """The trade-off chart's axes, clamped to the data (a small margin so that no marker
    is cut): peaks of every point shown, accuracies of the completed runs. Whether the
    budget falls inside them (else the chart says where it is rather than stretching)."""
    peaks = [p.peak_mb for p in info.done] + [p.peak_mb for p in info.oom]
    accs = [p.accuracy for p in info.done if p.accuracy is not None]
    x = _padded(peaks, 0.08, max(1.0, 0.02 * max(peaks, default=0.0)))
    y = _padded(accs, 0.12, 0.005)
    budget = info.budget_mb
    return TradeoffAxes(x, y, bool(budget and x and x[0] <= budget <= x[1]), bool(accs))


# ---------------------------------------------------------------- a remedy, phase by phase

class RemedyPhasesInfo(NamedTuple):
    """Per-phase exact peaks of a remedy's before and after runs (MiB), the phase that owns
    each run's peak, the phases it acts on, and the highest peak of the others."""

    phases: list[str]
    before: list[float | None]
    after: list[float | None]
    owner_before: str | None
    owner_after: str | None
    acts_on: list[str]
    other_phase: str | None
    other_mb: float | None


def remedy_phases_info(before: dict, after: dict, cmp: dict | None) -> RemedyPhasesInfo:
    """Per-phase exact peaks of a remedy's before and after runs (MiB; None where a run
    had no such phase), the phase that owns each run's peak, the phases the remedy acts
    on, and the highest peak among the phases it does not act on."""
    bp, ap = before.get("phases") or {}, after.get("phases") or {}
    phases = [p for p in PHASES if p in bp or p in ap]
    cmp = cmp or {}
    return RemedyPhasesInfo(phases, [bp.get(p) for p in phases], [ap.get(p) for p in phases],
                            before.get("peak_phase"), after.get("peak_phase"),
                            [p for p in phases if p in (cmp.get("acts_on") or [])], cmp.get("other_phase"),
                            cmp.get("other_phase_mb"))


def remedy_phases_figure(info: RemedyPhasesInfo, title: str) -> go.Figure:
    """Before/after bars per phase; the bar that owns each run's peak is solid, outlined
    and its value bold, the others faded; the phases the remedy acts on are shaded; a dashed line
    marks what the other phases hold, below which the run's peak cannot fall."""
    fig = go.Figure()
    phases = info.phases
    for i, p in enumerate(phases):
        if p in info.acts_on:
            fig.add_vrect(x0=i - 0.5, x1=i + 0.5, fillcolor="rgba(84,162,75,0.12)", line_width=0, layer="below")
    for name, values, owner, colour in (("before", info.before, info.owner_before, PALETTE[0]),
                                        ("after", info.after, info.owner_after, PALETTE[1])):
        fig.add_trace(go.Bar(
            x=phases, y=values, name=name, marker=dict(
                color=colour, opacity=[1.0 if p == owner else 0.45 for p in phases],
                line=dict(color=["#222" if p == owner else colour for p in phases],
                          width=[2.5 if p == owner else 0 for p in phases])),
            text=[("" if v is None else f"<b>{v:,.0f}</b>" if p == owner else f"{v:,.0f}")
                  for p, v in zip(phases, values)],
            textposition="outside", textfont=dict(size=10), cliponaxis=False,
            hovertemplate="%{x}: %{y:,.1f} MiB (exact)<extra>" + name + "</extra>"))
    if info.other_mb:
        fig.add_hline(y=info.other_mb, line=dict(color="#E45756", dash="dash", width=1.5),
                      annotation_text=f"{info.other_phase}, not touched by it: {info.other_mb:,.0f} MiB",
                      annotation_position="bottom left", annotation_font_size=10)
    top = max([v for v in info.before + info.after if v is not None], default=1.0)
    fig = _layout(fig, chart_text(title), "phase (shaded: the phases it acts on; outlined: the phase that owns the run's peak)",
                  "exact peak (MiB)", height=340)
    fig.update_layout(barmode="group", hovermode="closest", bargap=0.25)
    fig.update_yaxes(range=[0, top * 1.18])
    return fig
