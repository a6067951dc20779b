"""Scaling benchmark: exact peak and throughput from 10^4 to 10^7 rows in each mode.

    python bench/scaling.py [--rows 10000,100000,1000000,10000000] [--epochs 2] [--out bench/results]

The same svmlight files (`sparse-text`, 2^20 features, ~46 nonzeros per row) go
through memory, stream and memmap mode with the compiled parser and solver, one run
at a time, each capped (a run that would not fit ends as `oom`, which is a result).
Stream and memmap should be flat in rows; memory mode grows with them. Writes a
Markdown table, the JSON, and an SVG plot (peak and samples/s against rows).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

MODES = ("memory", "stream", "memmap", "lean")
KNOBS = dict(parser="native", solver="native")
# "lean": stream mode with the native parser and solver (numpy and the C library only)
MODE_KNOBS = {"lean": dict(mode="stream", parser="native", solver="native", threads=2)}


def dataset(rows: int, work: str) -> str:
    path = os.path.join(work, f"sparse-text-{rows}.svm")
    if not os.path.exists(path):
        print(f"writing {rows:,} rows to {path} ...", flush=True)
        subprocess.run([sys.executable, "-m", "svmcore", "data", "make", "sparse-text", "--rows", str(rows),
                        "--out", path + ".part"], check=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
        os.replace(path + ".part", path)
    return path


def run(path: str, home: str, mode: str, epochs: int, cap_mb: int) -> dict:
    knobs = {**KNOBS, "mode": mode, **MODE_KNOBS.get(mode, {})}
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, "--json", f"--dataset={path}",
                           f"--epochs={epochs}", f"--memory-cap-mb={cap_mb}",
                           *[f"--{k}={v}" for k, v in knobs.items()]],
                          capture_output=True, text=True, cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT))
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    rates = s.get("epoch_samples_per_s") or []
    return {"status": s["status"], "peak_rss_mb": s.get("peak_rss_mb"), "peak_phase": s.get("peak_phase"),
            "floor_mb": s.get("floor_mb"), "accuracy": s.get("accuracy"), "samples_per_s": s.get("samples_per_s"),
            "first_pass_samples_per_s": rates[0] if rates else None,
            "later_samples_per_s": sum(rates[1:]) / len(rates[1:]) if len(rates) > 1 else None,
            "wall_s": s.get("wall_s"), "prepare_s": next((p["wall_s"] for p in s.get("phases", [])
                                                          if p["name"] == "prepare"), None)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="10000,100000,1000000,10000000")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--cap-mb", type=int, default=20_000, help="cap on every run (MiB)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--modes", default=",".join(MODES),
                    help="which of memory,stream,memmap,lean to run (a subset writes scaling-<modes>.*)")
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "svmcore-bench"),
                    help="folder for the data files (outside the repository)")
    ap.add_argument("--machine-note", default="", help="appended to the machine description (e.g. contention)")
    args = ap.parse_args()
    sizes = [int(r) for r in args.rows.split(",")]
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        ap.error(f"unknown mode(s) {', '.join(sorted(unknown))}; choose from {', '.join(MODES)}")
    work = args.work
    os.makedirs(work, exist_ok=True)
    home = tempfile.mkdtemp(prefix="svmcore-scaling-")
    results = []
    for rows in sizes:
        path = dataset(rows, work)
        for mode in modes:
            print(f"{rows:>10,} rows, {mode} ...", flush=True)
            r = {"rows": rows, "mode": mode, **run(path, home, mode, args.epochs, args.cap_mb)}
            results.append(r)
            print("   ", {k: (round(v, 1) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)

    def f(v, spec):
        return "–" if v is None else format(v, spec)

    machine = {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version(),
               "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}
    if args.machine_note:
        machine["note"] = args.machine_note
    lines = [f"# Scaling, {time.strftime('%Y-%m-%d')}", "",
             f"`sparse-text` svmlight files, 2^20 features, ~46 nonzeros per row; {args.epochs} epochs; "
             "parser and solver compiled (native; lean: stream mode with the native C parser and solver, "
             f"2 threads); every run capped at {args.cap_mb:,} MiB. Machine: {machine}. "
             "Peaks are exact (the worker's VmHWM). First pass: epoch 1 (parses text in stream mode); later: "
             "epochs 2+ (stream reads its binary spill, memmap its binary copy, memory its arrays).", "",
             "| rows | mode | status | exact peak MiB | peak phase | first pass samples/s | later samples/s | accuracy |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['rows']:,} | {r['mode']} | {r['status']} | {f(r['peak_rss_mb'], ',.0f')} | "
                     f"{r['peak_phase'] or '–'} | {f(r['first_pass_samples_per_s'], ',.0f')} | "
                     f"{f(r['later_samples_per_s'], ',.0f')} | {f(r['accuracy'], '.4f')} |")
    table = "\n".join(lines)
    print("\n" + table)
    os.makedirs(args.out, exist_ok=True)
    stem = os.path.join(args.out, "scaling" if modes == list(MODES) else "scaling-" + "-".join(modes))
    with open(stem + ".md", "w") as fh:
        fh.write(table + "\n")
    with open(stem + ".json", "w") as fh:
        json.dump({"machine": machine, "epochs": args.epochs, "knobs": KNOBS, "results": results}, fh, indent=1)
    plot(results, stem + ".svg")
    return 0


COLOURS = {"memory": "#E45756", "stream": "#4C78A8", "memmap": "#54A24B", "lean": "#B279A2"}


def plot(results: list[dict], out: str) -> None:
    """Two log-log panels as a self-contained SVG (viewable offline and on GitHub):
    exact peak and later-pass samples/s against rows, one line per mode."""
    import math

    W, H, M = 420, 300, 55
    panels = [("exact peak (MiB)", "peak_rss_mb"), ("samples/s, later passes", "later_samples_per_s")]
    done = [r for r in results if r["status"] == "completed"]
    xs = [r["rows"] for r in done]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{2 * W + 40}" height="{H + 40}" '
             'font-family="sans-serif" font-size="11">']
    for i, (title, key) in enumerate(panels):
        ys = [r[key] for r in done if r[key]]
        if not ys or not xs:
            continue
        x0, x1 = math.log10(min(xs)), math.log10(max(xs)) + 1e-9
        y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)) + 1e-9)
        ox = i * (W + 40)

        def px(v):
            return ox + M + (math.log10(v) - x0) / (x1 - x0) * (W - M - 40)

        def py(v):
            return H - M + 20 - (math.log10(v) - y0) / (y1 - y0) * (H - M - 10)

        parts.append(f'<text x="{ox + W / 2}" y="14" text-anchor="middle" font-weight="bold">{title}</text>')
        for e in range(int(y0), int(y1) + 1):
            y = py(10 ** e)
            parts.append(f'<line x1="{ox + M}" x2="{ox + W - 10}" y1="{y}" y2="{y}" stroke="#ddd"/>'
                         f'<text x="{ox + M - 4}" y="{y + 4}" text-anchor="end">{10 ** e:,.0f}</text>')
        for v in sorted(set(xs)):
            x = px(v)
            parts.append(f'<line x1="{x}" x2="{x}" y1="{py(10 ** y0)}" y2="{py(10 ** y1)}" stroke="#eee"/>'
                         f'<text x="{x}" y="{H - 12}" text-anchor="middle">{v:,}</text>')
        parts.append(f'<text x="{ox + W / 2}" y="{H + 4}" text-anchor="middle">rows</text>')
        for j, mode in enumerate(MODES):
            pts = [(px(r["rows"]), py(r[key])) for r in done if r["mode"] == mode and r[key]]
            if pts:
                parts.append(f'<polyline fill="none" stroke="{COLOURS[mode]}" stroke-width="2" points="'
                             + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
                parts += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLOURS[mode]}"/>' for x, y in pts]
            parts.append(f'<text x="{ox + M + 10 + 70 * j}" y="{H + 30}" fill="{COLOURS[mode]}">&#9632; {mode}</text>')
    parts.append("</svg>")
    with open(out, "w") as fh:
        fh.write("\n".join(parts))


if __name__ == "__main__":
    sys.exit(main())
