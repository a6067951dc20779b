"""Charts. Each is a pure ``*_info`` function (plain lists, tested with ==) and a
drawing function that turns it into a Plotly figure with units on every axis."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from svmcore.app.remedy_results import PHASE_ORDER
from svmcore.spec.events import EVAL, PHASE_END, PHASE_START, PROGRESS
from svmcore.spec.units import MiB
from svmcore.store.records import PhaseSpan, RunSummary

# colour-blind-safe palette, readable on light and dark backgrounds
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#B279A2", "#72B7B2", "#EECA3B", "#9D755D",
           "#FF9DA6", "#BAB0AC")
PHASE_COLOURS = {"imports": "rgba(150,150,150,0.15)", "prepare": "rgba(114,183,178,0.15)",
                 "load": "rgba(245,133,24,0.15)", "transform": "rgba(178,121,162,0.15)",
                 "train": "rgba(76,120,168,0.12)", "evaluate": "rgba(84,162,75,0.15)"}


def run_colour(run_id: int) -> str:
    """One colour per run, the same on every page."""
    return PALETTE[(run_id - 1) % len(PALETTE)]


def _layout(fig: go.Figure, title: str, x: str, y: str, height: int = 300) -> go.Figure:
    fig.update_layout(title=dict(text=title, font=dict(size=14)), height=height, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title=x, yaxis_title=y, legend=dict(orientation="h", y=-0.25), hovermode="x unified")
    return fig


# ---------------------------------------------------------------- one run

def memory_info(samples: Sequence, summary: RunSummary, prediction: dict | None = None) -> dict:
    """Series for the memory chart: sampled RSS split anon/file, phase bands, the exact
    peak, the cap, the floor and the predicted peak, all in MiB."""
    prediction = prediction or summary.prediction or {}
    return {
        "t": [round(s.t_s, 3) for s in samples],
        "rss": [s.rss_bytes / MiB for s in samples],
        "anon": [s.anon_bytes / MiB for s in samples],
        "file": [s.file_bytes / MiB for s in samples],
        "phases": [(p.name, p.start_s, p.end_s) for p in summary.phases if p.end_s is not None],
        "peak_mb": summary.peak_rss_mb,
        "cap_mb": summary.cap_mb,
        "floor_mb": summary.floor_mb,
        "predicted_mb": prediction.get("predicted_peak_mb"),
    }


def live_phases(events: list[dict], now_s: float) -> tuple[PhaseSpan, ...]:
    """Phase spans from raw events while a run is going (the open phase ends 'now')."""
    out: list[dict] = []
    for e in events:
        if e["kind"] == PHASE_START:
            out.append({"name": e["phase"], "start_s": e["t_s"], "end_s": None, "wall_s": None, "peak_rss_mb": None})
        elif e["kind"] == PHASE_END and out and out[-1]["name"] == e["phase"]:
            out[-1].update(end_s=e["t_s"], wall_s=e["wall_s"], peak_rss_mb=e["peak_rss_bytes"] / MiB)
    if out and out[-1]["end_s"] is None:
        out[-1]["end_s"] = now_s
    return tuple(PhaseSpan(**p) for p in out)


def memory_figure(info: dict, colour: str = PALETTE[0], title: str = "Memory (RSS, sampled at 50 Hz)") -> go.Figure:
    fig = go.Figure()
    for name, start, end in info["phases"]:
        fig.add_vrect(x0=start, x1=end, fillcolor=PHASE_COLOURS.get(name, "rgba(128,128,128,0.1)"),
                      line_width=0, annotation_text=name, annotation_position="top left",
                      annotation_font_size=10)
    if info.get("floor_mb"):
        fig.add_hrect(y0=0, y1=info["floor_mb"], fillcolor="rgba(128,128,128,0.12)", line_width=0,
                      annotation_text=f"floor: interpreter + libraries {info['floor_mb']:.0f} MiB",
                      annotation_position="bottom right", annotation_font_size=10)
    fig.add_trace(go.Scatter(x=info["t"], y=info["anon"], name="anonymous", mode="lines",
                             line=dict(width=0), stackgroup="rss", fillcolor="rgba(76,120,168,0.35)",
                             hovertemplate="%{y:.1f} MiB"))
    fig.add_trace(go.Scatter(x=info["t"], y=info["file"], name="file-backed", mode="lines",
                             line=dict(width=0), stackgroup="rss", fillcolor="rgba(114,183,178,0.45)",
                             hovertemplate="%{y:.1f} MiB"))
    fig.add_trace(go.Scatter(x=info["t"], y=info["rss"], name="total RSS", mode="lines",
                             line=dict(color=colour, width=2), hovertemplate="%{y:.1f} MiB"))
    if info.get("peak_mb"):
        fig.add_hline(y=info["peak_mb"], line=dict(color=colour, dash="dash", width=1),
                      annotation_text=f"exact peak {info['peak_mb']:.1f} MiB",
                      annotation_position="bottom left", annotation_font_size=10)
    if info.get("predicted_mb"):
        fig.add_hline(y=info["predicted_mb"], line=dict(color="#9D755D", dash="dot", width=1),
                      annotation_text=f"predicted {info['predicted_mb']:.0f} MiB",
                      annotation_position="top left", annotation_font_size=10)
    if info.get("cap_mb"):
        fig.add_hline(y=info["cap_mb"], line=dict(color="#E45756", width=2),
                      annotation_text=f"cap {info['cap_mb']:.0f} MiB", annotation_position="top right",
                      annotation_font_size=10)
    return _layout(fig, title, "time since launch (s)", "MiB")


def throughput_info(events: list[dict], window: int = 3) -> dict:
    """samples/s between progress events (moving average over ``window`` intervals)."""
    prog = [(e["train_elapsed_s"], e["samples"], e["t_s"]) for e in events if e["kind"] == PROGRESS]
    t, rate = [], []
    for i in range(1, len(prog)):
        j = max(0, i - window)
        dt = prog[i][0] - prog[j][0]
        if dt > 0:
            t.append(round(prog[i][2], 3))
            rate.append((prog[i][1] - prog[j][1]) / dt)
    return {"t": t, "samples_per_s": rate}


def throughput_figure(info: dict, colour: str = PALETTE[0]) -> go.Figure:
    fig = go.Figure(go.Scatter(x=info["t"], y=info["samples_per_s"], mode="lines", name="samples/s",
                               line=dict(color=colour, width=2), hovertemplate="%{y:,.0f} samples/s"))
    return _layout(fig, "Throughput", "time since launch (s)", "samples/s")


def accuracy_info(events: list[dict]) -> dict:
    ev = [e for e in events if e["kind"] == EVAL and not e.get("final")]
    final = next((e for e in events if e["kind"] == EVAL and e.get("final")), None)
    return {"samples": [e["samples"] for e in ev], "accuracy": [e["accuracy"] for e in ev],
            "balanced": [e.get("balanced_accuracy") for e in ev],
            "rows": ev[0]["rows"] if ev else None,
            "final": (final["samples"], final["accuracy"], final["rows"]) if final else None,
            "final_balanced": final.get("balanced_accuracy") if final else None}


def accuracy_figure(info: dict, colour: str = PALETTE[0]) -> go.Figure:
    fig = go.Figure(go.Scatter(x=info["samples"], y=info["accuracy"], mode="lines+markers",
                               name=f"held-out sample ({info['rows'] or 0:,} rows)",
                               line=dict(color=colour, width=2), hovertemplate="%{y:.4f}"))
    if any(b is not None for b in info.get("balanced", [])):
        fig.add_trace(go.Scatter(x=info["samples"], y=info["balanced"], mode="lines", name="balanced accuracy",
                                 line=dict(color=colour, width=2, dash="dot"), hovertemplate="%{y:.4f}"))
    if info["final"]:
        s, a, rows = info["final"]
        fig.add_trace(go.Scatter(x=[s], y=[a], mode="markers", name=f"final, all {rows:,} test rows",
                                 marker=dict(color=colour, size=12, symbol="star")))
        if info.get("final_balanced") is not None:
            fig.add_trace(go.Scatter(x=[s], y=[info["final_balanced"]], mode="markers", name="final balanced",
                                     marker=dict(color=colour, size=11, symbol="star-open")))
    return _layout(fig, "Held-out accuracy (dotted: balanced)", "samples seen", "accuracy")


# ---------------------------------------------------------------- several runs

def samples_at(events: list[dict], t: Sequence[float]) -> list[float | None]:
    """Samples seen at each time (linear between progress events), to align runs by work done."""
    prog = [(e["t_s"], e["samples"]) for e in events if e["kind"] == PROGRESS]
    if not prog:
        return [None] * len(t)
    ts, ss = zip(*prog)
    return np.interp(np.asarray(t, dtype=float), ts, ss, left=0.0, right=ss[-1]).tolist()


def compare_info(views: Sequence, align: str = "time") -> list[dict]:
    """Per run: x (time or samples seen), rss, throughput and accuracy series."""
    out = []
    for v in views:
        t = [s.t_s for s in v.samples]
        rss = [s.rss_bytes / MiB for s in v.samples]
        if align == "samples":
            x = samples_at(v.events, t)
            pairs = [(a, b) for a, b in zip(x, rss) if a is not None]
            x, rss = [p[0] for p in pairs], [p[1] for p in pairs]
        else:
            x = t
        thr = throughput_info(v.events)
        acc = accuracy_info(v.events)
        out.append({"id": v.id, "name": f"run {v.id}" + (f" · {v.label}" if v.label else ""),
                    "colour": run_colour(v.id), "x": x, "rss": rss,
                    "thr_x": thr["t"] if align == "time" else samples_at(v.events, thr["t"]),
                    "thr": thr["samples_per_s"], "acc_x": acc["samples"], "acc": acc["accuracy"],
                    "peak_mb": v.summary.peak_rss_mb})
    return out


def compare_figures(info: list[dict], align: str = "time") -> tuple[go.Figure, go.Figure, go.Figure]:
    xlab = "time since launch (s)" if align == "time" else "samples seen"
    mem, thr, acc = go.Figure(), go.Figure(), go.Figure()
    for r in info:
        mem.add_trace(go.Scatter(x=r["x"], y=r["rss"], name=r["name"], mode="lines",
                                 line=dict(color=r["colour"], width=2)))
        if r["peak_mb"]:
            mem.add_hline(y=r["peak_mb"], line=dict(color=r["colour"], dash="dash", width=1))
        thr.add_trace(go.Scatter(x=r["thr_x"], y=r["thr"], name=r["name"], mode="lines",
                                 line=dict(color=r["colour"], width=2)))
        acc.add_trace(go.Scatter(x=r["acc_x"], y=r["acc"], name=r["name"], mode="lines+markers",
                                 line=dict(color=r["colour"], width=2)))
    return (_layout(mem, "Memory (RSS sampled; dashed: exact peak)", xlab, "MiB"),
            _layout(thr, "Throughput", xlab, "samples/s"),
            _layout(acc, "Held-out accuracy", "samples seen", "accuracy"))


def tradeoff_info(points: Sequence, budget_mb: float | None = None) -> dict:
    done = [p for p in points if p.status == "completed"]
    oom = [p for p in points if p.status == "oom"]
    front = sorted((p for p in done if p.on_frontier), key=lambda p: p.peak_mb)
    return {
        "done": [(p.run_id, p.peak_mb, p.accuracy, p.samples_per_s or 0.0, p.label) for p in done],
        "oom": [(p.run_id, p.peak_mb, p.label) for p in oom],
        "frontier": [(p.peak_mb, p.accuracy) for p in front],
        "budget_mb": budget_mb,
    }


def tradeoff_figure(info: dict) -> go.Figure:
    fig = go.Figure()
    if info["done"]:
        ids, peak, acc, sps, labels = zip(*info["done"])
        biggest = max(sps) or 1.0
        fig.add_trace(go.Scatter(
            x=peak, y=acc, mode="markers", name="completed runs",
            marker=dict(size=[10 + 30 * (s / biggest) for s in sps], color=list(sps), colorscale="Viridis",
                        showscale=True, colorbar=dict(title="samples/s"), line=dict(width=1, color="#333")),
            text=[f"run {i}: {lab}" for i, lab in zip(ids, labels)], customdata=list(sps),
            hovertemplate="%{text}<br>peak %{x:.1f} MiB<br>accuracy %{y:.4f}<br>%{customdata:,.0f} samples/s"))
    if info["frontier"]:
        fx, fy = zip(*info["frontier"])
        fig.add_trace(go.Scatter(x=fx, y=fy, mode="lines", name="Pareto frontier",
                                 line=dict(color="#E45756", width=2, dash="dot", shape="hv")))
    if info["oom"]:
        ids, peak, labels = zip(*info["oom"])
        lo = min((p[2] for p in info["done"] if p[2] is not None), default=0.5)
        fig.add_trace(go.Scatter(x=peak, y=[lo] * len(peak), mode="markers", name="out of memory",
                                 marker=dict(symbol="x", size=14, color="#E45756"),
                                 text=[f"run {i}: {lab} (oom at {p:.0f} MiB)" for i, lab, p in zip(ids, labels, peak)],
                                 hovertemplate="%{text}"))
    axes = tradeoff_axes(info)
    budget = info.get("budget_mb")
    if budget and axes["budget_in_view"]:
        fig.add_vline(x=budget, line=dict(color="#999", dash="dash"), annotation_text=f"budget {budget:.0f} MiB")
    elif budget and axes["x"]:  # the axes stay on the data: say where the budget is instead of stretching them
        right = budget > axes["x"][1]
        fig.add_annotation(xref="paper", yref="paper", x=1.0 if right else 0.0, y=1.0, showarrow=False,
                           xanchor="right" if right else "left", yanchor="bottom", font=dict(size=11, color="#777"),
                           text=f"budget {budget:.0f} MiB {'→ (above every run)' if right else '← (below every run)'}")
    fig = _layout(fig, "Trade-off: exact peak memory vs accuracy (size and colour: throughput)",
                  "exact peak RSS (MiB)", "test accuracy", height=460)
    fig.update_layout(hovermode="closest")
    if axes["x"]:
        fig.update_xaxes(range=axes["x"], autorange=False)
    if axes["y"]:
        fig.update_yaxes(range=axes["y"], autorange=False)
    return fig


def _padded(values: list[float], rel: float, least: float) -> list[float] | None:
    if not values:
        return None
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * rel, least)
    return [lo - pad, hi + pad]


def tradeoff_axes(info: dict) -> dict:
    """The trade-off chart's axes, clamped to the data (a small margin so that no marker
    is cut): peaks of every point shown, accuracies of the completed runs. Whether the
    budget falls inside them (else the chart says where it is rather than stretching)."""
    peaks = [p[1] for p in info["done"]] + [p[1] for p in info["oom"]]
    accs = [p[2] for p in info["done"] if p[2] is not None]
    x = _padded(peaks, 0.08, max(1.0, 0.02 * max(peaks, default=0.0)))
    y = _padded(accs, 0.12, 0.005)
    budget = info.get("budget_mb")
    return {"x": x, "y": y, "budget_in_view": bool(budget and x and x[0] <= budget <= x[1])}


# ---------------------------------------------------------------- a remedy, phase by phase

def remedy_phases_info(before: dict, after: dict, cmp: dict | None) -> dict:
    """Per-phase exact peaks of a remedy's before and after runs (MiB; None where a run
    had no such phase), the phase that owns each run's peak, the phases the remedy acts
    on, and the highest peak among the phases it does not act on."""
    bp, ap = before.get("phases") or {}, after.get("phases") or {}
    phases = [p for p in PHASE_ORDER if p in bp or p in ap]
    cmp = cmp or {}
    return {"phases": phases, "before": [bp.get(p) for p in phases], "after": [ap.get(p) for p in phases],
            "owner_before": before.get("peak_phase"), "owner_after": after.get("peak_phase"),
            "acts_on": [p for p in phases if p in (cmp.get("acts_on") or [])],
            "other_phase": cmp.get("other_phase"), "other_mb": cmp.get("other_phase_mb")}


def remedy_phases_figure(info: dict, title: str) -> go.Figure:
    """Before/after bars per phase; the bar that owns each run's peak is solid, outlined
    and its value bold, the others faded; the phases the remedy acts on are shaded; a dashed line
    marks what the other phases hold, below which the run's peak cannot fall."""
    fig = go.Figure()
    phases = info["phases"]
    for i, p in enumerate(phases):
        if p in info["acts_on"]:
            fig.add_vrect(x0=i - 0.5, x1=i + 0.5, fillcolor="rgba(84,162,75,0.12)", line_width=0, layer="below")
    for name, values, owner, colour in (("before", info["before"], info["owner_before"], PALETTE[0]),
                                        ("after", info["after"], info["owner_after"], PALETTE[1])):
        fig.add_trace(go.Bar(
            x=phases, y=values, name=name, marker=dict(
                color=colour, opacity=[1.0 if p == owner else 0.45 for p in phases],
                line=dict(color=["#222" if p == owner else colour for p in phases],
                          width=[2.5 if p == owner else 0 for p in phases])),
            text=[("" if v is None else f"<b>{v:,.0f}</b>" if p == owner else f"{v:,.0f}")
                  for p, v in zip(phases, values)],
            textposition="outside", textfont=dict(size=10), cliponaxis=False,
            hovertemplate="%{x}: %{y:,.1f} MiB (exact)<extra>" + name + "</extra>"))
    if info.get("other_mb"):
        fig.add_hline(y=info["other_mb"], line=dict(color="#E45756", dash="dash", width=1.5),
                      annotation_text=f"{info['other_phase']}, not touched by it: {info['other_mb']:,.0f} MiB",
                      annotation_position="bottom left", annotation_font_size=10)
    top = max([v for v in info["before"] + info["after"] if v is not None], default=1.0)
    fig = _layout(fig, title, "phase (shaded: the phases it acts on; outlined: the phase that owns the run's peak)",
                  "exact peak (MiB)", height=340)
    fig.update_layout(barmode="group", hovermode="closest", bargap=0.25)
    fig.update_yaxes(range=[0, top * 1.18])
    return fig
