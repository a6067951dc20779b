"""What scoring costs the compiled solvers, before and after they scored from their state:
the same runs with the code of a git ref (``--before``, default ``main``) and of this tree,
side by side, each solver with live scoring (monitor=full, scored every second) and without
(monitor=off, scored once at the end). Per run: the exact peak of each phase (the kernel's
high-water mark, reset at the phase's start), the floor and the accuracy.

    python bench/scoring_memory.py [--before main] [--rows 50000] [--bits 24] [--out bench/results]

Each run goes through the normal CLI in its own worker, one at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.remedies import describe, machine  # noqa: E402

SOLVERS = ("sklearn", "native", "ftrl")
MONITORS = ("full", "off")


def run(tree: str, home: str, rows: int, bits: int, solver: str, monitor: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, "--dataset=sparse-text",
                           f"--rows={rows}", f"--hashing-bits={bits}", "--epochs=1", f"--solver={solver}",
                           f"--monitor={monitor}", "--seed=0", "--json"],
                          env=dict(os.environ, PYTHONPATH=tree), cwd=tree, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"run {solver} monitor={monitor} in {tree} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default=None, help="the git ref of the code before (default: where this branch "
                    "left main)")
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--bits", type=int, default=24)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the existing .json")
    args = ap.parse_args()
    if args.render:
        with open(os.path.join(args.out, "scoring-memory.json")) as f:
            result = json.load(f)
        with open(os.path.join(args.out, "scoring-memory.md"), "w") as f:
            f.write(markdown(result))
        return 0
    before = tempfile.mkdtemp(prefix="svmcore-before-")
    ref = args.before or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True,
                                        text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    after = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.strip()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", before], input=archive, check=True)
    home = tempfile.mkdtemp(prefix="svmcore-scoring-")
    load_before = os.getloadavg()
    t0 = time.time()
    for tree in (before, ROOT):  # each tree builds its native library once: not inside a measured run
        for solver in SOLVERS:
            run(tree, home, 5000, args.bits, solver, "off")
    runs = []
    for solver in SOLVERS:
        for monitor in MONITORS:
            for code, tree in (("before", before), ("after", ROOT)):
                s = run(tree, home, args.rows, args.bits, solver, monitor)
                runs.append({"solver": solver, "monitor": monitor, "code": code, "status": s["status"],
                             "phases": {p["name"]: p["peak_rss_mb"] for p in s["phases"]},
                             "floor_mb": s["floor_mb"], "peak_rss_mb": s["peak_rss_mb"], "accuracy": s["accuracy"],
                             "nonzero_weights": s.get("nonzero_weights")})
                print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    m = machine()
    m["loadavg_before"], m["loadavg_after"] = [round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]
    result = {"date": time.strftime("%Y-%m-%d"), "rows": args.rows, "bits": args.bits, "before": commit,
              "after": after, "machine": m, "description": describe(m), "seconds": round(time.time() - t0),
              "runs": runs}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scoring-memory.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "scoring-memory.md"), "w") as f:
        f.write(markdown(result))
    print(markdown(result))
    return 0


def markdown(r: dict) -> str:
    m = r["machine"]
    weights = 2 ** r["bits"] * 8 / 2**20
    lines = [f"# Scoring from the solver's state: exact peaks before and after, {r['date']}", "",
             (f"Data: `sparse-text`, {r['rows']:,} rows (a fifth held out), 50 nonzeros a row, hashed to "
              f"2^{r['bits']} columns (one float64 weight array: {weights:,.0f} MiB); memory mode, averaged SGD, "
              f"1 epoch, seed 0; one run at a time, after a small run of each solver in each tree (numba compiles "
              f"once, outside the measured runs). Before: commit {r['before']}; after: {r['after']} (the compiled "
              "solvers score rows from their weights and lazy factors, FTRL from z and n, touching only the columns "
              "present; nonzero weights are counted without a copy). monitor=full scores a held-out sample every "
              "second while training; off scores only at the end (evaluate phase). Peaks are exact (the kernel's "
              "high-water mark, reset at each phase's start), in MiB, floor included. Machine: "
              f"{r['description']}; load average {m['loadavg_before'][0]} before and {m['loadavg_after'][0]} after "
              f"({r['seconds']} s of runs): other work shared the 2 cores, which changes speeds, not peaks."), "",
             ("| solver | monitor | floor | train before | train after | evaluate before | evaluate after "
              "| above floor before | above floor after | accuracy before | accuracy after |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for solver in dict.fromkeys(x["solver"] for x in r["runs"]):
        for monitor in dict.fromkeys(x["monitor"] for x in r["runs"]):
            b = next((x for x in r["runs"] if (x["solver"], x["monitor"], x["code"]) == (solver, monitor, "before")),
                     None)
            a = next((x for x in r["runs"] if (x["solver"], x["monitor"], x["code"]) == (solver, monitor, "after")),
                     None)
            if not (a and b):
                continue
            lines.append(
                f"| {solver} | {monitor} | {a['floor_mb']:,.0f} | {b['phases']['train']:,.0f} | "
                f"{a['phases']['train']:,.0f} | {b['phases']['evaluate']:,.0f} | {a['phases']['evaluate']:,.0f} | "
                f"{b['peak_rss_mb'] - b['floor_mb']:,.0f} | {a['peak_rss_mb'] - a['floor_mb']:,.0f} | "
                f"{b['accuracy']:.4f} | {a['accuracy']:.4f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
