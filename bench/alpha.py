"""Does the default regularisation fit the data? Per solver (scikit-learn's SGD, the native
compiled SGD, FTRL), the accuracy and balanced accuracy at default knobs against
the best of a grid of strengths, on several files: the first N rows of one `sparse-text` file
(N = 2*10^5 and 10^6) with the same 20,000 later rows as the test file for all, files of other
shapes (a few thousand rows, dense, very sparse), each with 20,000 later rows of its own as the
test file, and an imbalanced file like w8a (3% positive, sorted by label, the positives grouped
by kind) tested on its held-out rows (every 5th row, so spread over the file). SGD's grid is
alpha in {1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7}; FTRL's is its l2 (alpha is SGD's knob and
does not apply to it).

    python bench/alpha.py [--only sparse-200k,small] [--data /tmp/svmcore-alpha-data]
    python bench/alpha.py --render        # only rewrite the .md from the .json

Each run goes through the normal CLI in its own worker, one at a time (memory mode, the
native parser, monitor off, every other knob at its default). Results are kept in
bench/results/alpha.json as they come, and a run already there is not repeated unless
--again names its dataset; a default run is always repeated (the default may have changed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.remedies import describe, machine  # noqa: E402

ALPHAS = (1e-4, 3e-5, 1e-5, 3e-6, 1e-6, 3e-7, 1e-7)
FTRL_L2 = (3.0, 1.0, 0.3, 0.1, 0.03, 0.01)
SOLVERS = ("sklearn", "native", "ftrl")
TEST_ROWS = 20_000
GOAL_POINTS = 0.5
GOAL_BALANCED_POINTS = 1.0  # issue 40: balanced accuracy within a point of the grid's best

# key: (generator, rows made, rows trained, data make flags, what it is)
DATASETS = {
    "sparse-200k": ("sparse-text", 1_020_000, 200_000, {}, "sparse-text, 2^20 columns, 50 nonzeros a row"),
    "sparse-1m": ("sparse-text", 1_020_000, 1_000_000, {}, "sparse-text, 2^20 columns, 50 nonzeros a row"),
    "small": ("sparse-text", 25_000, 5_000, {"seed": 1}, "sparse-text, a few thousand rows"),
    "dense": ("dense", 120_000, 100_000, {"seed": 2}, "dense, 200 columns, every value set"),
    "very-sparse": ("sparse-text", 220_000, 200_000, {"seed": 3, "nnz_per_row": 5, "features": 1 << 22},
                    "sparse-text, 2^22 columns, 5 nonzeros a row"),
    # made rows = trained + held out (every 5th row): no test file
    "imbalanced": ("sparse-text", 50_000, 40_000, {"seed": 1, "nnz_per_row": 30, "features": 1 << 14,
                                                   "positive_fraction": 0.03, "sort_by_label": True,
                                                   "group_kinds": True},
                   "sparse-text, 2^14 columns, 30 nonzeros a row, 3% positive, sorted by label and the positives "
                   "grouped by kind (like w8a), tested on its 10,000 held-out rows"),
}
HELD_OUT = {"imbalanced"}


def _make(data_dir: str, kind: str, made: int, flags: dict) -> str:
    from svmcore.data.files import make_dataset

    name = f"{kind}-{made}-" + "-".join(f"{k}{v}" for k, v in sorted(flags.items())) + ".svm"
    path = os.path.join(data_dir, name)
    if not os.path.exists(path):
        flags = {"seed": 0, "nnz_per_row": 50, "features": None, **flags}
        make_dataset(kind, rows=made, out=path + ".part", **flags)
        os.replace(path + ".part", path)
    return path


def files(data_dir: str, key: str) -> tuple[str, str | None]:
    """The train file (the first rows) and the test file (the last TEST_ROWS rows) of a dataset;
    a held-out dataset's whole file and no test file."""
    kind, made, rows, flags, _ = DATASETS[key]
    whole = _make(data_dir, kind, made, flags)
    if key in HELD_OUT:
        return whole, None
    train, test = f"{whole[:-4]}-first{rows}.svm", f"{whole[:-4]}-last{TEST_ROWS}.svm"
    for path, cmd in ((train, f"head -n {rows}"), (test, f"tail -n {TEST_ROWS}")):
        if not os.path.exists(path):
            with open(path + ".part", "w") as out:
                subprocess.run(cmd.split() + [whole], stdout=out, check=True)
            os.replace(path + ".part", path)
    return train, test


def run(home: str, train: str, test: str | None, solver: str, setting: dict) -> dict:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in setting.items()] + ([f"--test-file={test}"] if test else [])
    proc = subprocess.run([sys.executable, "-m", "svmcore", "run", "--home", home, f"--dataset={train}",
                           "--parser=native", f"--solver={solver}", "--monitor=off", "--json", *flags],
                          env=dict(os.environ, PYTHONPATH=ROOT, SVMCORE_DATA_DIRS=os.path.dirname(train)), cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"run {solver} {setting} on {train} failed: {proc.stderr[-2000:]}")
    s = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"accuracy": s["accuracy"], "balanced_accuracy": s["balanced_accuracy"], "train_s": s["train_s"],
            "peak_rss_mb": s["peak_rss_mb"], "regularisation": s.get("regularisation")}


def grid(solver: str, alphas=ALPHAS, l2s=FTRL_L2) -> list[dict]:
    return [{"l2": v} for v in l2s] if solver == "ftrl" else [{"alpha": v} for v in alphas]


def label(setting: dict) -> str:
    return "default" if not setting else ",".join(f"{k}={v:g}" for k, v in setting.items())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated datasets (default: all): " + ", ".join(DATASETS))
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--again", default="", help="comma-separated datasets whose grid runs are measured again")
    ap.add_argument("--data", default=os.environ.get("SVMCORE_ALPHA_DATA", "/tmp/svmcore-alpha-data"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--grid-only", action="store_true", help="measure the grid, not the default")
    ap.add_argument("--default-only", action="store_true", help="measure the default, not the grid")
    ap.add_argument("--alphas", default="", help="comma-separated part of the alpha grid to measure (default all)")
    ap.add_argument("--l2s", default="", help="comma-separated part of FTRL's l2 grid to measure (default all)")
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the existing .json")
    args = ap.parse_args()
    path = os.path.join(args.out, "alpha.json")
    result = {"runs": {}}
    if os.path.exists(path):
        with open(path) as f:
            result = json.load(f)
    if not args.render:
        os.makedirs(args.data, exist_ok=True)
        home = os.path.join(args.data, "home")
        again = set(filter(None, args.again.split(",")))
        load_before = os.getloadavg()
        t0 = time.time()
        for key in [k for k in (args.only.split(",") if args.only else DATASETS)]:
            train, test = files(args.data, key)
            for solver in args.solvers.split(","):
                part = grid(solver, [float(a) for a in args.alphas.split(",")] if args.alphas else ALPHAS,
                            [float(a) for a in args.l2s.split(",")] if args.l2s else FTRL_L2)
                for setting in ([] if args.grid_only else [{}]) + ([] if args.default_only else part):
                    rid = f"{key}|{solver}|{label(setting)}"
                    if setting and rid in result["runs"] and key not in again:
                        continue
                    result["runs"][rid] = {"dataset": key, "solver": solver, "setting": setting,
                                           **run(home, train, test, solver, setting)}
                    print(json.dumps(result["runs"][rid]), file=sys.stderr, flush=True)
                    with open(path, "w") as f:
                        json.dump(result, f, indent=1)
        m = machine()
        m["loadavg_before"] = [round(x, 2) for x in load_before]
        m["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
        result.update(date=time.strftime("%Y-%m-%d"), machine=m, description=describe(m),
                      seconds=round(time.time() - t0))
        with open(path, "w") as f:
            json.dump(result, f, indent=1)
    with open(os.path.join(args.out, "alpha.md"), "w") as f:
        f.write(markdown(result))
    return 0


def summary(result: dict) -> list[dict]:
    """One row per (dataset, solver): the default's accuracy, the best of the grid and the gap."""
    rows = []
    for key in DATASETS:
        for solver in SOLVERS:
            runs = [r for r in result["runs"].values() if r["dataset"] == key and r["solver"] == solver]
            default = next((r for r in runs if not r["setting"]), None)
            tried = [r for r in runs if r["setting"]]
            if default is None or not tried:
                continue
            best = max(tried, key=lambda r: r["accuracy"])
            best_bal = max(tried, key=lambda r: r["balanced_accuracy"])
            gap = 100 * (best["accuracy"] - default["accuracy"])
            gap_bal = 100 * (best_bal["balanced_accuracy"] - default["balanced_accuracy"])
            rows.append({"dataset": key, "solver": solver, "default": default, "best": best, "best_bal": best_bal,
                         "gap_points": gap, "gap_bal_points": gap_bal,
                         "met": gap <= GOAL_POINTS and gap_bal <= GOAL_BALANCED_POINTS, "grid": tried})
    return rows


def _used(r: dict) -> str:
    reg = r.get("regularisation") or {}
    if not reg:
        return "–"
    name = reg.get("name", "alpha")
    return f"{name} {reg['value']:.2g} ({reg.get('source', '')})"


def markdown(result: dict) -> str:
    rows = summary(result)
    out = ["# The default regularisation against the best of a grid", "",
           result.get("description", ""), "",
           "Accuracy and balanced accuracy on 20,000 test rows that follow the training rows in the same file (the "
           "imbalanced file: on its held-out rows); memory mode, native parser, every other knob at its default (5 "
           "epochs, averaged SGD, batch 1,024, seed 0). SGD's grid is alpha in "
           f"{{{', '.join(f'{a:g}' for a in ALPHAS)}}}; FTRL's is l2 in {{{', '.join(f'{a:g}' for a in FTRL_L2)}}}. "
           f"Goal: the default within {GOAL_POINTS} points of the grid's best accuracy and within "
           f"{GOAL_BALANCED_POINTS:g} point of its best balanced accuracy (issue 40). Where a grid was cut short to "
           "save time (10^6 rows, very-sparse, one solver of dense), the points measured are listed below; the old "
           "fixed default was alpha 1e-5 (and FTRL's l2 0.1), both in the grids. alpha auto is the rule in rows times "
           "the class balance (the classes times the smallest class's share, at most 1): about 1 on the balanced "
           "files, 0.05 on the imbalanced one.", ""]
    for key, (_, _, rows_trained, _, what) in DATASETS.items():
        out.append(f"- **{key}**: {rows_trained:,} training rows of {what}")
    out += ["", "| data | solver | default used | default acc | best of grid | best acc | gap (points) | default bal. acc "
            "| best of grid (bal.) | best bal. acc | gap (points) | goal |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['dataset']} | {r['solver']} | {_used(r['default'])} | {r['default']['accuracy']:.4f} | "
                   f"{label(r['best']['setting'])} | {r['best']['accuracy']:.4f} | {r['gap_points']:+.2f} | "
                   f"{r['default']['balanced_accuracy']:.4f} | {label(r['best_bal']['setting'])} | "
                   f"{r['best_bal']['balanced_accuracy']:.4f} | {r['gap_bal_points']:+.2f} | "
                   f"{'met' if r['met'] else 'NOT met'} |")
    out += ["", "Every grid point (accuracy / balanced accuracy):", ""]
    for r in rows:
        cells = ", ".join(f"{label(g['setting'])}: {g['accuracy']:.4f} / {g['balanced_accuracy']:.4f}"
                          for g in r["grid"])
        out.append(f"- {r['dataset']} / {r['solver']}: {cells}")
    la, lb = result.get("machine", {}).get("loadavg_before"), result.get("machine", {}).get("loadavg_after")
    if la:
        out += ["", f"The machine was shared (load average {la[0]} before, {lb[0]} after); accuracy does not "
                "depend on it."]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main())
