"""What the trace knob costs: each setup untraced and traced (memray's tracker, Python and native
frames, every allocation recorded) side by side in one run, the two interleaved and their order
alternated round by round, on the default setup and on the lean path.

    python bench/trace_overhead.py [--repeats 2] [--rows 100000] [--out bench/results]
    python bench/trace_overhead.py --render   # the .md and Learn's reference from the committed .json

Each run is a real worker process through the engine, one at a time; peaks are the worker's
kernel high-water mark (exact); rows/s is the train phase's (wall time, on a shared machine:
compare within this run only) and per CPU second of the worker in that phase (less moved by other
work on the machine: the figure the ratios use); reading the trace is the parent's CPU time (``engine.traces.read``
once more on the finished run, process time)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.monitoring import median  # noqa: E402
from bench.remedies import describe, machine, rerender, write_result  # noqa: E402
from svmcore.engine import traces  # noqa: E402
from svmcore.engine.runner import Run  # noqa: E402
from svmcore.spec.config import validate  # noqa: E402
from svmcore.spec.result import TRACE_FILE  # noqa: E402
from svmcore.spec.status import RunStatus  # noqa: E402
from svmcore.store.sqlite import Store  # noqa: E402

SETUPS = {
    "default": "default setup (sparse-text, ROWS rows x 2^20 columns, sparse, in memory, 5 epochs, scikit-learn)",
    "lean": "lean path (the same rows as a svmlight file, native parser and solver, stream mode, 5 epochs)",
}
KEYS = ("run_peak_mb", "floor_mb", "train_peak_mb", "samples_per_s", "rows_per_cpu_s", "train_s", "wall_s", "accuracy")


def one(store: Store, values: dict) -> dict:
    run = Run(store, validate(values)).start()
    status = run.wait(3600)
    s = run.summary
    if status != RunStatus.COMPLETED:
        raise SystemExit(f"{values}: run ended {status.value}: {s.error_message}")
    cpu_s = next(p.cpu_s for p in s.phases if p.name == "train")  # the worker's, every thread
    out = {"run_peak_mb": s.peak_rss_mb, "floor_mb": s.floor_mb, "train_peak_mb": s.phase_peak("train"),
           "samples_per_s": s.samples_per_s, "rows_per_cpu_s": s.samples_seen / cpu_s, "train_s": s.train_s,
           "wall_s": s.wall_s, "accuracy": s.accuracy}
    if s.trace is not None:
        cpu = time.process_time()
        again = traces.read(run.run_dir, run.started_at, s.phases, [])
        out.update(read_cpu_s=time.process_time() - cpu, allocations=again.allocations,
                   trace_bytes=os.path.getsize(os.path.join(run.run_dir, TRACE_FILE)),
                   traced_peak_mb=again.at(None).traced_bytes / 2**20, error=again.error)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--render", action="store_true")
    args = ap.parse_args()
    if args.render:
        return rerender(args.out, "trace-overhead", markdown, reference)
    folder = tempfile.mkdtemp(prefix="svmcore-trace-bench-")
    store = Store(os.path.join(folder, "home"))
    from svmcore.data.files import make_dataset

    data = os.path.join(folder, "train.svm")
    make_dataset("sparse-text", rows=args.rows, features=1 << 20, nnz_per_row=50, seed=0, out=data)
    values = {"default": {"rows": args.rows},
              "lean": {"dataset": data, "parser": "native", "solver": "native", "mode": "stream"}}
    load_before, t0 = os.getloadavg(), time.time()
    runs = []
    for rep in range(args.repeats):
        for setup in SETUPS:
            order = (False, True) if rep % 2 == 0 else (True, False)  # the first of a pair warms the page cache
            for traced in order:
                runs.append({"setup": setup, "traced": traced, "repeat": rep,
                             **one(store, {**values[setup], "trace": traced})})
                print(runs[-1], file=sys.stderr, flush=True)
    m = machine()
    m["loadavg_before"], m["loadavg_after"] = [round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]
    result = {"date": time.strftime("%Y-%m-%d"), "rows": args.rows, "repeats": args.repeats, "machine": m,
              "description": describe(m), "seconds": round(time.time() - t0), "runs": runs}
    write_result(args.out, "trace-overhead", result, markdown(result), reference(result))
    print(markdown(result))
    return 0


def table(result: dict) -> list[dict]:
    """Per setup: the medians untraced and traced, and what tracing changed."""
    out = []
    for setup in SETUPS:
        plain, traced = ({k: median([r for r in result["runs"] if r["setup"] == setup and r["traced"] == t], k)
                          for k in KEYS + ("read_cpu_s", "allocations", "trace_bytes", "traced_peak_mb")}
                         for t in (False, True))
        out.append({"setup": setup, "untraced": plain, "traced": traced,
                    "speed_ratio": traced["rows_per_cpu_s"] / plain["rows_per_cpu_s"],
                    "peak_added_mb": traced["run_peak_mb"] - plain["run_peak_mb"],
                    "floor_added_mb": traced["floor_mb"] - plain["floor_mb"]})
    return out


def markdown(result: dict) -> str:
    rows = table(result)
    lines = [f"# What tracing costs: the trace knob on and off, {result['date']}", "",
             f"Machine: {result['description']}; load average {result['machine']['loadavg_before']} at the start, "
             f"{result['machine']['loadavg_after']} at the end: times compare within this run only (median of "
             f"{result['repeats']} pairs, untraced and traced interleaved, their order alternated; "
             f"{result['seconds']} s in all). Peaks are the worker's kernel high-water mark (VmHWM): exact. rows/s: "
             "the train phase's rows per wall second, and per CPU second of the worker (less moved by other work on "
             "the shared cores: the ratios below use it). The traced run records every allocation with its Python and native frames "
             "(memray 1.20, all-allocations format: a phase's peak needs the heap over time).", "",
             "| setup | trace | exact peak (MiB) | floor (MiB) | train peak (MiB) | train rows/s | rows per CPU s | "
             "wall s | accuracy | allocations | trace file | reading it (CPU s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for name in ("untraced", "traced"):
            v = r[name]
            extra = (f"{v['allocations']:,.0f} | {v['trace_bytes'] / 2**20:,.1f} MiB | {v['read_cpu_s']:,.1f}"
                     if name == "traced" else "– | – | –")
            lines.append(f"| {r['setup']} | {name} | {v['run_peak_mb']:,.1f} | {v['floor_mb']:,.1f} | "
                         f"{v['train_peak_mb']:,.1f} | {v['samples_per_s']:,.0f} | {v['rows_per_cpu_s']:,.0f} | "
                         f"{v['wall_s']:,.1f} | "
                         f"{v['accuracy']:.4f} | {extra} |")
    lines += [""] + [f"- {line}" for line in lessons(result)]
    return "\n".join(lines) + "\n"


def lessons(result: dict) -> list[str]:
    out = []
    for r in table(result):
        title = SETUPS[r["setup"]].replace("ROWS", f"{result['rows']:,}")
        out.append(f"{title}: tracing trained at {r['speed_ratio']:.2f}x the untraced rows per CPU second "
                   f"({r['traced']['rows_per_cpu_s']:,.0f} against {r['untraced']['rows_per_cpu_s']:,.0f}; per wall "
                   f"second {r['traced']['samples_per_s']:,.0f} against {r['untraced']['samples_per_s']:,.0f}) and raised "
                   f"the exact peak by {r['peak_added_mb']:+,.1f} MiB ({r['untraced']['run_peak_mb']:,.1f} → "
                   f"{r['traced']['run_peak_mb']:,.1f}; the floor {r['floor_added_mb']:+,.1f}); it recorded "
                   f"{r['traced']['allocations']:,.0f} allocations in a {r['traced']['trace_bytes'] / 2**20:,.1f} MiB "
                   f"file, which the parent read in {r['traced']['read_cpu_s']:,.1f} CPU s")
    return out


def reference(result: dict):
    """What Learn shows beside 'turning off monitoring and callbacks': a sentence per setup."""
    from svmcore.app.reference import Reference

    rows = table(result)
    row = {"setup": " · ".join(SETUPS[r["setup"]].split(" (")[0] for r in rows),
           "run's exact peak (MiB)": " · ".join(f"{r['setup']} {r['untraced']['run_peak_mb']:,.1f} → "
                                                 f"{r['traced']['run_peak_mb']:,.1f}" for r in rows),
           "verdict": "tracing costs speed and memory: " + ", ".join(
               f"{r['setup']} {r['speed_ratio']:.2f}x the rows per CPU second, {r['peak_added_mb']:+,.0f} MiB of exact peak"
               for r in rows)}
    return Reference("trace_overhead", result["description"], result["date"], "python bench/trace_overhead.py",
                     result["seconds"], {"row": row, "lessons": lessons(result)})


if __name__ == "__main__":
    sys.exit(main())
