"""Label-sorted files, as many public libsvm files come: balanced accuracy and exact peak
of every mode at default knobs (shuffle on), side by side in one run, against memory
mode's full permutation.

    python bench/label_sorted.py [--rows 50000 200000] [--seeds 0 1 2] [--tag after] [--out bench/results]
                                 [--files top near-top kinds] [--root CHECKOUT]

Three files per size, 3% positive, no extension (like a9a):
- ``top``: every positive row first (``svmcore data make --positive-fraction 0.03 --sort-by-label``);
- ``near-top``: the same rows cut into a real-file-like order: 2% of the negatives first,
  then the block of positives, then the other negatives;
- ``kinds``: like w8a, whose positives come in runs of alike rows: every positive first,
  grouped by kind (``make_dataset(..., group_kinds=True)``: the marker token that makes each
  one positive), on 2^14 columns of 30 nonzeros (the file of tests/integration/test_label_sorted.py).
The configurations: memory, stream and memmap at default knobs, the lean pair (stream mode,
``--parser native --solver native``) and the same pair in memory mode (``lean-memory``: the
native solver's full permutation, which the lean path's shuffle is measured against). Each
run goes through the normal CLI in its own worker, so peaks are exact (the kernel's VmHWM,
read by the runner) and the figures are the run summaries. Each is run with several seeds
(the training seed; the data stay the same): the table gives the mean, and the spread
(max - min) of memory mode's balanced accuracy says how much of a gap is noise. ``--root``
runs another checkout's CLI (e.g. the commit before a fix) on the files this one makes.
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
    "lean-memory": ["--mode=memory", "--parser=native", "--solver=native"],
}
# file -> (what make_dataset is given besides rows, seed and the 3% positives; the near-top reorder)
FILES = {
    "top": ({"features": 1 << 18, "nnz_per_row": 40}, False),
    "near-top": ({"features": 1 << 18, "nnz_per_row": 40}, True),
    "kinds": ({"features": 1 << 14, "nnz_per_row": 30, "group_kinds": True}, False),
}


def run(path: str, home: str, args: list[str], seed: int, root: str = ROOT) -> dict:
    env = dict(os.environ, PYTHONPATH=root, SVMCORE_DATA_DIRS=os.path.dirname(path))
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, f"--dataset={path}",
                           f"--seed={seed}", *args, "--json"],
                          env=env, cwd=root, capture_output=True, text=True, check=True)
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


def measure(path: str, home: str, seeds: list[int], root: str = ROOT) -> list[dict]:
    rows = []
    for name, args in CONFIGS.items():
        got = [run(path, home, args, seed, root) for seed in seeds]
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
    ap.add_argument("--files", nargs="+", default=list(FILES), choices=list(FILES))
    ap.add_argument("--tag", default="", help="suffix of the result files, e.g. 'before'")
    ap.add_argument("--root", default=ROOT, help="the checkout whose CLI runs (default: this one)")
    ap.add_argument("--note", default="", help="a sentence for the description, e.g. which commit --root is")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    args = ap.parse_args()
    from svmcore.data.files import make_dataset

    name = "label-sorted" + (f"-{args.tag}" if args.tag else "")
    json_path = os.path.join(args.out, f"{name}.json")
    cases = []
    if os.path.exists(json_path):  # other runs kept: a (size, file) re-measured replaces its case
        with open(json_path) as f:
            cases = [c for c in json.load(f)["cases"] if (c["rows"], c["file"]) not in
                     {(n, file) for n in args.rows for file in args.files}]
    work = tempfile.mkdtemp(prefix="svmcore-sorted-")
    home = os.path.join(work, "home")
    for n in args.rows:
        for file in args.files:
            shape, near = FILES[file]
            path = os.path.join(work, f"{file}{n}")
            made = path + "-made" if near else path
            make_dataset("sparse-text", rows=n, seed=1, out=made, positive_fraction=args.positive_fraction,
                         sort_by_label=True, **shape)
            if near:
                near_top(made, path)
            cases.append({"file": file, "rows": n, "seeds": args.seeds,
                          "runs": measure(path, home, args.seeds, os.path.abspath(args.root))})
            cases.sort(key=lambda c: (c["rows"], list(FILES).index(c["file"])))
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
             f"Data: `sparse-text`, {args.positive_fraction:.0%} positive, no extension. `top`: 2^18 features, 40 "
             "nonzeros a row, every positive row first (`svmcore data make --sort-by-label`); `near-top`: the same "
             "rows with 2% of the negatives, then the positives, then the other negatives; `kinds`: 2^14 features, "
             "30 nonzeros a row, every positive row first, grouped by kind (`make_dataset(..., group_kinds=True)`), "
             "as w8a's positives come. Default knobs (5 epochs, batch 1024, shuffle on, default shuffle buffer, "
             "alpha auto); lean = stream mode with `--parser native --solver native`, lean-memory = the same in "
             "memory mode (the native solver's full permutation). Each case is run with the training seeds listed "
             "(the data are the same); balanced accuracy is their mean; the peak is the highest of the runs' exact "
             "peaks (kernel VmHWM)." + (f" {args.note}" if args.note else "")
             + f" Machine: {platform.machine()}, {os.cpu_count()} cores shared with other jobs (samples/s is "
             f"indicative only), Python {platform.python_version()}.", ""] + table(result)
    with open(os.path.join(args.out, f"{name}.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))

if __name__ == "__main__":
    sys.exit(main())
