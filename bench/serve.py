"""Train offline, serve light (issue 21): each linear solver trained on a sparse-text file,
its exported model then served by ``svmcore predict`` in a lean child process. Per solver:
the training run's exact peak and speed, the serving process's exact peak, floor and
rows/s, whether its accuracy is the training run's own, and the model's bytes in each
layout (dense float64, dense float32, sparse float64, sparse float32) and as exported.

    python bench/serve.py [--rows 200000] [--test-rows 50000] [--epochs 2] [--out bench/results]

One file of rows+test_rows rows (``svmcore data make sparse-text``, seed 0, 2^20 columns,
50 nonzeros a row) is cut into a training file and a test file of later rows; every run
goes through the normal CLI, one at a time.
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

from bench.remedies import describe, machine, rerender, write_result  # noqa: E402
from svmcore.app.reference import Reference  # noqa: E402

MiB = 2**20
# (label, training flags): the lean pair trains in stream mode, the others in memory (the default)
SOLVERS = (("sklearn", ("--solver=sklearn",)), 
           ("native (lean path)", ("--solver=native", "--parser=native", "--mode=stream")),
           ("ftrl", ("--solver=ftrl",)), ("ftrl, l1=2", ("--solver=ftrl", "--l1=2")))


def cli(home: str, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "svmcore", *args, "--json"], cwd=ROOT, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=ROOT, SVMCORE_HOME=home), check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"svmcore {' '.join(args)} failed: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def split(folder: str, rows: int, test_rows: int, make: tuple = ("sparse-text",)) -> tuple[str, str]:
    """A training file of ``rows`` rows and a test file of the ``test_rows`` after them, from ``svmcore data make``."""
    whole = os.path.join(folder, "all.svm")
    subprocess.run([sys.executable, "-m", "svmcore", "data", "make", *make, f"--rows={rows + test_rows}",
                    "--seed=0", f"--out={whole}"], cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), check=True,
                   capture_output=True)
    return cut(folder, whole, rows)


def cut(folder: str, whole: str, rows: int) -> tuple[str, str]:
    """``whole`` cut into train.svm (its first ``rows`` lines) and test.svm (the rest), then removed."""
    train, test = os.path.join(folder, "train.svm"), os.path.join(folder, "test.svm")
    with open(whole, "rb") as f, open(train, "wb") as a, open(test, "wb") as b:
        for i, line in enumerate(f):
            (a if i < rows else b).write(line)
    os.remove(whole)
    return train, test


def measure(home: str, train: str, test: str, epochs: int, flags: tuple[str, ...]) -> dict:
    t = cli(home, "run", f"--dataset={train}", f"--test-file={test}", f"--epochs={epochs}", "--seed=0", *flags)
    if t["status"] != "completed":
        raise RuntimeError(f"training {flags} ended {t['status']}: {t.get('error')}")
    s = cli(home, "predict", "--model", str(t["run_id"]), "--data", test, "--out", os.devnull)
    e = t["model_export"]
    return {"train_peak_mb": t["peak_rss_mb"], "train_floor_mb": t["floor_mb"], "train_peak_phase": t["peak_phase"],
            "train_samples_per_s": t["samples_per_s"], "train_accuracy": t["accuracy"],
            "evaluate_peak_mb": next(p["peak_rss_mb"] for p in t["phases"] if p["name"] == "evaluate"),
            "serve_peak_mb": s["peak_mb"], "serve_floor_mb": s["floor_mb"], "serve_rows_per_s": s["rows_per_s"],
            "serve_rows": s["rows"], "serve_accuracy": s["accuracy"], "model_memory_bytes": s["model_memory_bytes"],
            "storage": e["storage"], "dtype": e["dtype"], "model_bytes": e["model_bytes"], "sizes": e["sizes"],
            "nonzero_weights": e["nonzero_weights"], "check": e["check"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--test-rows", type=int, default=50_000)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the existing .json")
    args = ap.parse_args()
    if args.render:
        return rerender(args.out, "serve", markdown, reference)
    folder = tempfile.mkdtemp(prefix="svmcore-serve-bench-")
    home = os.path.join(folder, "home")
    train, test = split(folder, args.rows, args.test_rows)
    load_before, t0 = os.getloadavg(), time.time()
    cli(home, "run", f"--dataset={test}", "--epochs=1", "--solver=ftrl")  # the native library built, outside the runs
    runs = []
    for label, flags in SOLVERS:
        runs.append({"solver": label, "flags": list(flags), **measure(home, train, test, args.epochs, flags)})
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    m = machine()
    m["loadavg_before"], m["loadavg_after"] = [round(x, 2) for x in load_before], [round(x, 2) for x in os.getloadavg()]
    result = {"date": time.strftime("%Y-%m-%d"), "rows": args.rows, "test_rows": args.test_rows, "epochs": args.epochs,
              "machine": m, "description": describe(m), "seconds": round(time.time() - t0), "runs": runs}
    write_result(args.out, "serve", result, markdown(result), reference(result))
    print(markdown(result))
    return 0


def _k(v: float) -> str:
    return f"{v / 1000:,.0f}k" if v >= 10_000 else f"{v:,.0f}"


def reference(r: dict) -> Reference:
    """What Learn shows of the results: the claims row (per solver the training run's and
    the serving process's exact peaks, rows/s and the model's bytes) and a sentence per solver."""
    runs = r["runs"]
    train = [x["train_peak_mb"] for x in runs]
    served = [x["serve_peak_mb"] for x in runs]
    row = {
        "setup": f"each linear solver, {r['rows']:,} sparse-text rows, serving {r['test_rows']:,}",
        "run's exact peak (MiB)": f"trained {min(train):,.0f}–{max(train):,.0f} → served {min(served):,.0f}–"
                                  f"{max(served):,.0f}",
        "speed (samples/s)": f"serving {_k(min(x['serve_rows_per_s'] for x in runs))}–"
                             f"{_k(max(x['serve_rows_per_s'] for x in runs))} rows/s",
        "accuracy (balanced)": ("served = trained, every solver" if all(
            x["serve_accuracy"] == x["train_accuracy"] for x in runs) else "served ≠ trained for some solver"),
        "verdict": "model " + ", ".join(f"{x['solver']} {x['model_bytes'] / MiB:.2f} MiB ({x['storage']} {x['dtype']})"
                                        for x in runs)}
    lessons = [f"{x['solver']}: trained in {x['train_peak_mb']:,.0f} MiB, serves in {x['serve_peak_mb']:,.0f} MiB "
               f"(its floor {x['serve_floor_mb']:,.0f}), {x['model_bytes'] / MiB:.2f} MiB model ({x['storage']} "
               f"{x['dtype']}, {x['nonzero_weights']:,} nonzero weights); {x['serve_rows_per_s']:,.0f} rows/s served "
               f"against {x['train_samples_per_s']:,.0f} trained; accuracy {x['serve_accuracy']:.4f}"
               + (" as in training" if x["serve_accuracy"] == x["train_accuracy"] else
                  f" (training's {x['train_accuracy']:.4f})") for x in runs]
    return Reference("serve", r["description"], r["date"], "python bench/serve.py", r["seconds"],
                     {"row": row, "lessons": lessons})


def markdown(r: dict) -> str:
    m = r["machine"]
    lines = [f"# Train offline, serve light: each solver's exported model served in a lean process, {r['date']}", "",
             (f"Data: `sparse-text` (`svmcore data make`, seed 0, 2^20 columns, 50 nonzeros a row), {r['rows']:,} "
              f"training rows and the {r['test_rows']:,} rows after them as the test file; {r['epochs']} epochs, seed 0, "
              "other knobs at their defaults (memory mode; the lean pair in stream mode). Serving: "
              "`svmcore predict --model RUN --data test.svm --out /dev/null`, a child process with numpy and the "
              "native library only, scoring the test file. Peaks are exact (the kernel's high-water mark: the "
              "training worker's over the run, the serving process's own), floors included, in MiB. Training "
              "rows/s is the train phase's (all epochs); serving rows/s includes parsing the text. The export "
              "keeps float32 when no prediction on 2,000 test rows changes, and the sparse layout when it is "
              f"smaller. Machine: {r['description']}; load average {m['loadavg_before'][0]} before and "
              f"{m['loadavg_after'][0]} after ({r['seconds']} s): other work shared the 2 cores, which changes "
              "speeds, not peaks."), "",
             ("| solver | trained in | serves in | serving floor | train rows/s | serve rows/s | accuracy (train = served) "
              "| nonzero weights | dense f64 | dense f32 | sparse f64 | sparse f32 | exported |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for x in r["runs"]:
        z = x["sizes"]
        same = "=" if x["serve_accuracy"] == x["train_accuracy"] else f"≠ {x['serve_accuracy']:.4f}"
        lines.append(
            f"| {x['solver']} | {x['train_peak_mb']:,.0f} | {x['serve_peak_mb']:,.1f} | {x['serve_floor_mb']:,.1f} | "
            f"{x['train_samples_per_s']:,.0f} | {x['serve_rows_per_s']:,.0f} | {x['train_accuracy']:.4f} {same} | "
            f"{x['nonzero_weights']:,} | {z['dense_float64'] / MiB:.2f} | {z['dense_float32'] / MiB:.2f} | "
            f"{z['sparse_float64'] / MiB:.2f} | {z['sparse_float32'] / MiB:.2f} | "
            f"{x['model_bytes'] / MiB:.2f} MiB {x['storage']} {x['dtype']} |")
    lines += ["", "Model sizes in MiB (weights and intercepts). float32 against float64 on the 2,000 checked rows: "
              + "; ".join(f"{x['solver']} {x['check']['float32_vs_float64']['changed_predictions']} predictions changed, "
                          f"scores within {x['check']['float32_vs_float64']['max_score_diff']:.1e}" for x in r["runs"])
              + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
