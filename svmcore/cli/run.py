"""``svmcore run``: train once in a child process, show its progress, print its outcome."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from svmcore.cli.common import EXIT, EXIT_BAD_INPUT, add_knob_flags, knob_values
from svmcore.engine import hostinfo, interrupts
from svmcore.engine.admission import Admitted
from svmcore.engine.recovery import recover
from svmcore.engine.runner import Run
from svmcore.predict.launch import admit, launch_warnings
from svmcore.spec.names import NAME_MOST, check_name, shown
from svmcore.spec.choices import Monitor
from svmcore.spec.events import EVAL, PROGRESS
from svmcore.spec.result import RunSummary
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store


def _bar(run) -> str:
    snap = run.snapshot()
    progress = next((e for e in reversed(snap.events) if e["kind"] == PROGRESS), None)
    acc = next((e["accuracy"] for e in reversed(snap.events) if e["kind"] == EVAL), None)
    rss = snap.samples[-1].rss_bytes / 2**20 if snap.samples else 0
    peak = max((s.hwm_bytes for s in snap.samples), default=0) / 2**20
    frac = 0.0
    if progress and progress.get("total"):
        frac = min(1.0, progress["samples"] / progress["total"])
    width = 24
    filled = int(frac * width)
    parts = [f"[{'#' * filled}{'-' * (width - filled)}] {frac * 100:5.1f}%", f"{snap.phase or '...':9s}",
             f"RSS {rss:7.1f} MiB (peak {peak:7.1f})"]
    if progress:
        parts.append(f"{progress['samples']:,} samples")
    elif run.config.monitor == Monitor.OFF:
        parts.append("monitor off: no progress until the end")
    if acc is not None:
        parts.append(f"acc {acc:.3f}")
    parts.append(f"{snap.elapsed_s:6.1f}s")
    return "  ".join(parts)


def execute(launch: Admitted, home: str, show_progress: bool, on_create=None):
    """Start an admitted launch (``predict.launch.admit``), show progress, cancel it on
    SIGINT/SIGTERM (``engine.interrupts``); returns the finished Run (``cancelled`` after a
    signal: ``interrupts.received()`` says which). ``on_create(run_id)`` is called once the
    run's row exists, before its worker starts."""
    store = Store(home)
    recover(store)
    run = Run(store, launch)
    try:
        with interrupts.shielded():
            if on_create is not None:
                run.enqueue()
                on_create(run.run_id)
            run.start()
        while not run.is_finished():
            run.wait(0.25 if show_progress else 1.0)
            if show_progress:
                sys.stderr.write("\r" + _bar(run)[:160])
                sys.stderr.flush()
    except interrupts.Interrupted:
        interrupts.end_children()  # this run, recorded cancelled, its processes and leftovers gone
    if show_progress:
        sys.stderr.write("\r" + _bar(run)[:160] + "\n")
    return run


def warn_before_launch(launch: Admitted) -> None:
    """Print on stderr why the run may not fit or may take long (never blocks it)."""
    if launch.forecast is None:
        return
    for text in launch_warnings(launch.config, launch.forecast, hostinfo.available_memory_bytes(),
                                hostinfo.usable_cpus()):
        print(f"svmcore: warning: {text}", file=sys.stderr)


def describe(summary: RunSummary, name: str | None = None) -> str:
    status = summary.status.value if summary.status else "unknown"
    lines = [f"run {summary.run_id}" + (f" ({shown(name)})" if name else "") + f": {status}"]
    if summary.error:
        lines.append(f"  {summary.error.type}: {summary.error_message}"
                     + (f" (in phase {summary.phase})" if summary.phase else ""))

    def fmt(v, unit="", spec=".1f"):
        return "n/a" if v is None else f"{v:{spec}}{unit}"

    peaks = summary.parallel_peaks
    if peaks:  # the run is all its processes, not the coordinator alone
        lines.append(f"  peak: {peaks.text()}")
    lines.append(f"  {'coordinator ' if peaks else ''}peak RSS {fmt(summary.peak_rss_mb, ' MiB')} exact (kernel high-water mark); "
                 f"sampled max {fmt(summary.peak_sampled_mb, ' MiB')} at {summary.sample_hz} Hz; "
                 f"floor {fmt(summary.floor_mb, ' MiB')}; cap {summary.cap_text}")
    if summary.cap_note:
        lines.append(f"  {summary.cap_note}")
    if summary.growth is not None:
        lines.append(f"  {summary.growth.text()}")
    lines.append(f"  wall {fmt(summary.wall_s, ' s')}, train {fmt(summary.train_s, ' s')}, "
                 f"{fmt(summary.samples_per_s, ' samples/s', ',.0f')}")
    lines.append(f"  accuracy {fmt(summary.accuracy, '', '.4f')}, "
                 f"balanced accuracy {fmt(summary.balanced_accuracy, '', '.4f')}, "
                 f"F1 ({summary.f1_of or '-'}) {fmt(summary.f1, '', '.4f')}; "
                 f"always predicting the majority class would score {fmt(summary.baseline_accuracy, '', '.4f')}")
    if summary.nonzero_weights is not None:
        lines.append(f"  model: {summary.nonzero_weights:,} nonzero of {summary.weights:,} weights; a sparse copy "
                     f"(index + float64 value each) takes {summary.sparse_model_bytes / 2**20:,.2f} MiB, exact")
    for line in summary.distillation.lines() if summary.distillation else ():
        lines.append(f"  {line}")
    for line in summary.kept.lines() if summary.kept else ():
        lines.append(f"  kept while training: {line}")
    if summary.upcast:
        u = summary.upcast
        lines.append(f"  float16 upcast: {u.float32_bytes_per_batch / 1024:,.1f} KiB float32 per batch (exact), "
                     f"{u.seconds_per_batch * 1e6:,.0f} µs per batch (measured), {u.batches:,} batches")
    reg = summary.regularisation
    if reg:
        lines.append(f"  regularisation: {reg.name} {reg.value:.3g} ({reg.why})")
    for warning in summary.score_warnings():
        lines.append(f"  WARNING: {warning.text}")
    par = summary.parallel
    if par:
        kind = "exact" if all(w.peak_exact for w in par.per_worker) else "sampled"
        lines.append(f"  data-parallel on {par.workers} Dask workers ({par.scheduler}; cluster start "
                     f"{fmt(par.cluster_start_s, ' s')}); workers' peaks " + ", ".join(fmt(w.peak_rss_mb, " MiB") for w in par.per_worker)
                     + f" ({kind}); all processes together {fmt(par.total_peak_sampled_mb, ' MiB')} (sampled sum)")
    for ph in summary.phases:
        lines.append(f"    {ph.name:10s} {fmt(ph.wall_s, ' s', '8.2f')}  peak {fmt(ph.peak_rss_mb, ' MiB', '8.1f')}"
                     + ("   <- owns the peak" if ph.name == summary.peak_phase else ""))
    if summary.trace:
        lines += [f"  {line}" for line in summary.trace.lines(summary.peak_rss_mb)]
    return "\n".join(lines)


def cmd_run(args, home: str) -> int:
    name = check_name(args.name)  # exit 2 and nothing stored for a name the rule refuses
    launch = admit(knob_values(args), home)  # exit 2 and nothing stored if it cannot run
    warn_before_launch(launch)

    def name_it(run_id: int) -> None:
        with contextlib.closing(Store(home)) as store:
            store.set_name(run_id, name)

    run = execute(launch, home, show_progress=sys.stderr.isatty() and not args.json, on_create=name_it if name else None)
    summary = run.summary
    if run.status == RunStatus.FAILED and summary.error and summary.error.bad_input:
        print(f"svmcore: error: {summary.error_message}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    else:
        code = EXIT.get(run.status, 1)
    if not run.recorded:  # the store could not take it: say so, or the history would contradict this
        print(f"svmcore: warning: run {run.run_id}'s outcome could not be written to the run store "
              f"({run.store_error}); the history will show it as lost", file=sys.stderr)
    print(json.dumps(summary.to_dict()) if args.json else describe(summary, name))
    return code


def add_parser(sub) -> None:
    r = sub.add_parser("run", help="train once in a child process and measure it")
    add_knob_flags(r)
    r.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    r.add_argument("--json", action="store_true", help="print the summary as one JSON line at the end")
    r.add_argument("--name", default=None, help=f"a name for the run, shown wherever it is listed: printable text, "
                   f"at most {NAME_MOST} characters (rename later with 'svmcore runs name ID NAME')")
    r.set_defaults(handler=cmd_run)
