"""Label-sorted files, as many public libsvm files come: balanced accuracy and exact peak
of every mode at default knobs (shuffle on), side by side in one run, against memory
mode's full permutation.

    python bench/label_sorted.py [--rows 50000 200000] [--seeds 0 1 2] [--tag after] [--out bench/results]

Two files per size, 3% positive, no extension (like a9a):
- ``top``: every positive row first (``svmcore data make --positive-fraction 0.03 --sort-by-label``);
- ``near-top``: the same rows cut into a real-file-like order: 2% of the negatives first,
  then the block of positives, then the other negatives.
The configurations: memory, stream and memmap at default knobs, and the lean pair
(stream mode, ``--parser native --solver native``). Each run goes through the normal CLI
in its own worker, so peaks are exact (the kernel's VmHWM, read by the runner) and the
figures are the run summaries. Each is run with several seeds (the training seed; the
data stay the same): the table gives the mean, and the spread (max - min) of memory
mode's balanced accuracy says how much of a gap is noise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

CONFIGS = {
    "memory": ["--mode=memory"],
    "stream": ["--mode=stream"],
    "memmap": ["--mode=memmap"],
    "lean": ["--mode=stream", "--parser=native", "--solver=native"],
}


def run(path: str, home: str, args: list[str], seed: int) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT, SVMCORE_DATA_DIRS=os.path.dirname(path))
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, f"--dataset={path}",
                           f"--seed={seed}", *args, "--json"],
                          env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def near_top(sorted_path: str, out: str, lead: float = 0.02) -> None:
    """The sorted file's rows reordered: ``lead`` of the negatives, the positives, the rest."""
    with open(sorted_path) as f:
        lines = f.readlines()
    pos = [ln for ln in lines if ln.split(" ", 1)[0] == "1"]
    neg = [ln for ln in lines if ln.split(" ", 1)[0] != "1"]
    k = int(len(neg) * lead)
    with open(out, "w") as f:
        f.writelines(neg[:k] + pos + neg[k:])


def measure(path: str, home: str, seeds: list[int]) -> list[dict]:
    rows = []
    for name, args in CONFIGS.items():
        got = [run(path, home, args, seed) for seed in seeds]
        bal = [s["balanced_accuracy"] for s in got]
        rows.append({"config": name, "args": args, "balanced_accuracy": statistics.mean(bal),
                     "balanced_accuracy_runs": bal, "accuracy": statistics.mean(s["accuracy"] for s in got),
                     "peak_rss_mb": max(s["peak_rss_mb"] for s in got),
                     "samples_per_s": statistics.mean(s["samples_per_s"] for s in got)})
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def table(result: dict) -> list[str]:
    lines = ["| file | rows | seeds | config | balanced accuracy (mean) | per seed | vs memory (points) | accuracy | "
             "exact peak MiB (max) | samples/s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for case in result["cases"]:
        mem = next(r for r in case["runs"] if r["config"] == "memory")["balanced_accuracy"]
        for r in case["runs"]:
            per = " ".join(f"{b:.3f}" for b in r["balanced_accuracy_runs"])
            seeds = " ".join(map(str, case["seeds"]))
            lines.append(f"| {case['file']} | {case['rows']:,} | {seeds} | {r['config']} | {r['balanced_accuracy']:.4f} | {per} | "
                         f"{100 * (r['balanced_accuracy'] - mem):+.1f} | {r['accuracy']:.4f} | "
                         f"{r['peak_rss_mb']:.0f} | {r['samples_per_s']:,.0f} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--positive-fraction", type=float, default=0.03)
    ap.add_argument("--tag", default="", help="suffix of the result files, e.g. 'before'")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    from svmcore.data.files import make_dataset

    name = "label-sorted" + (f"-{args.tag}" if args.tag else "")
    json_path = os.path.join(args.out, f"{name}.json")
    cases = []
    if os.path.exists(json_path):  # runs of other sizes kept: a size re-measured replaces its cases
        with open(json_path) as f:
            cases = [c for c in json.load(f)["cases"] if c["rows"] not in args.rows]
    work = tempfile.mkdtemp(prefix="svmcore-sorted-")
    home = os.path.join(work, "home")
    for n in args.rows:
        top = os.path.join(work, f"sorted{n}")
        make_dataset("sparse-text", rows=n, features=1 << 18, nnz_per_row=40, seed=1, out=top,
                     positive_fraction=args.positive_fraction, sort_by_label=True)
        near = os.path.join(work, f"neartop{n}")
        near_top(top, near)
        for file, path in (("top", top), ("near-top", near)):
            cases.append({"file": file, "rows": n, "seeds": args.seeds, "runs": measure(path, home, args.seeds)})
            cases.sort(key=lambda c: (c["rows"], c["file"] != "top"))
            write(args, name, cases)
    return 0


def write(args, name: str, cases: list[dict]) -> None:
    result = {"date": time.strftime("%Y-%m-%d"), "positive_fraction": args.positive_fraction,
              "machine": {"arch": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
              "cases": cases}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    lines = [f"# Label-sorted files: every mode at default knobs{' (' + args.tag + ')' if args.tag else ''}, "
             f"{result['date']}", "",
             f"Data: `sparse-text`, 2^18 features, 40 nonzeros a row, {args.positive_fraction:.0%} positive, no "
             "extension. `top`: every positive row first (`svmcore data make --sort-by-label`); `near-top`: 2% of "
             "the negatives, then the positives, then the other negatives. Default knobs (5 epochs, batch 1024, "
             "shuffle on, default shuffle buffer, alpha auto); lean = stream mode with `--parser native --solver "
             "native`. Each case is run with the training seeds listed (the data are the same); balanced accuracy "
             "is their mean; the peak is the highest of the runs' exact peaks (kernel VmHWM). "
             f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other jobs (samples/s is "
             f"indicative only), Python {platform.python_version()}.", ""] + table(result)
    with open(os.path.join(args.out, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

if __name__ == "__main__":
    sys.exit(main())
