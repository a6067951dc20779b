"""``fit`` measured: from starting points that do not fit a memory budget (different
datasets, modes, models and budgets), how often ``fit`` ends with a run within the
budget, in how many runs, and what it gave up in accuracy and speed against the best
fitting config of a small sweep over the same knobs.

    python bench/fit.py [--home CALIBRATED_HOME] [--only NAME,...] [--dry] [--out bench/results]
    python bench/fit.py --report          # rewrite fit.md and the reference data from fit.json

Every attempt and every sweep point is a real worker process through the engine, one
at a time, with the budget as its memory cap; "within the budget" is its exact peak
(VmHWM) at or under it. The sweep's best is the fitting point with the highest balanced
accuracy (then the fastest). Speeds are samples/s of the train phase on a shared machine:
compare them within one starting point only. ``--dry`` prints each starting point's
forecast and exits.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from bench.checkpointing import machine  # noqa: E402
from bench.remedies import write_reference  # noqa: E402
from svmcore.app.doctor import model_view  # noqa: E402
from svmcore.app.fit import fit  # noqa: E402
from svmcore.app.reference import Reference, remedies_reference  # noqa: E402
from svmcore.cli.run import execute  # noqa: E402
from svmcore.predict.calibration import calibrate, load_calibration  # noqa: E402
from svmcore.predict.launch import admit  # noqa: E402
from svmcore.spec.config import RunConfig, validate  # noqa: E402
from svmcore.spec.status import RunStatus  # noqa: E402
from svmcore.store.sqlite import Store  # noqa: E402

_MODES = {"mode": ["memory", "memmap", "stream"], "precision": ["float64", "float32"]}
# name, starting knobs, budget (MiB), the sweep over the knobs fit may change there
POINTS = [
    ("sparse-300k-memory", {"rows": 300_000, "epochs": 1}, 250, _MODES),
    ("sparse-100k-tight", {"rows": 100_000, "epochs": 1}, 215, _MODES),
    ("dense-150k-memory", {"dataset": "dense", "rows": 150_000, "epochs": 1}, 260, _MODES),
    ("dense-batches-stream", {"rows": 50_000, "epochs": 1, "mode": "stream", "representation": "dense",
                              "hashing_bits": 12, "batch_size": 8192}, 260,
     {"representation": ["dense", "sparse"], "batch_size": [8192, 1024], "monitor": ["full", "light"]}),
    ("dense-memmap-hashed", {"rows": 30_000, "epochs": 1, "mode": "memmap", "representation": "dense",
                             "hashing_bits": 11, "batch_size": 4096}, 200,
     {"representation": ["dense", "sparse"], "batch_size": [4096, 1024]}),
    ("mlp-numpy-deep", {"dataset": "dense", "rows": 10_000, "epochs": 1, "model": "mlp-numpy",
                        "hidden": "1024,1024,1024,1024", "batch_size": 4096}, 330,
     {"batch_size": [4096, 1024], "checkpoint": [0, 2], "monitor": ["full", "light"]}),
    ("mlp-2^20-columns", {"rows": 20_000, "epochs": 1, "model": "mlp", "hidden": "64"}, 450,
     {"hashing_bits": [18, 16, 14]}),
    ("kernel-svm-exact", {"dataset": "dense", "rows": 8_000, "features": 200, "epochs": 1, "model": "kernel-svm",
                          "cache_size_mb": 500}, 230,
     {"model": ["kernel-svm", "kernel-approx"], "n_components": [256, 128]}),
]


def grid(base: dict, knobs: dict) -> list[dict]:
    out, seen = [], set()
    for combo in itertools.product(*knobs.values()):
        values = {**base, **dict(zip(knobs, combo))}
        try:
            key = validate(values).to_json()
        except Exception:  # a combination the knobs refuse is not a point of the sweep
            continue
        if key not in seen:
            seen.add(key)
            out.append(values)
    return out


def run_one(home: str, values: dict, budget: int, parent=None, change=None):
    store = Store(home)
    cfg = values if isinstance(values, RunConfig) else validate(values, memory_cap_mb=budget)
    on_create = (lambda run_id: store.set_lineage(run_id, parent, change)) if change is not None else None
    run = execute(admit(cfg, home), home, show_progress=False, on_create=on_create)
    rec = store.get_run(run.run_id)
    store.close()
    return rec


def figures(rec) -> dict:
    s = rec.summary
    return {"run_id": rec.id, "status": rec.status.value, "peak_mb": s.peak_rss_mb and round(s.peak_rss_mb, 1),
            "accuracy": s.accuracy, "balanced_accuracy": s.balanced_accuracy,
            "samples_per_s": s.samples_per_s and round(s.samples_per_s), "train_s": s.train_s}


def measure(name: str, base: dict, budget: int, knobs: dict, home: str, cal) -> dict:
    t0 = time.time()
    result = fit(base, budget, lambda cfg, parent, change: run_one(home, cfg, budget, parent, change), cal,
                 remedies_reference(), os.path.join(home, "cache"))
    fit_s = time.time() - t0
    sweep = []
    for values in grid(base, knobs):
        rec = run_one(home, values, budget)
        f = figures(rec)
        f["fits"] = rec.status == RunStatus.COMPLETED and f["peak_mb"] is not None and f["peak_mb"] <= budget
        f["knobs"] = {k: values[k] for k in knobs if k in values}
        sweep.append(f)
    fitting = [p for p in sweep if p["fits"]]
    best = max(fitting, key=lambda p: (p["balanced_accuracy"] or 0, p["samples_per_s"] or 0)) if fitting else None
    final = result["attempts"][-1] if result["attempts"] else None
    out = {"name": name, "base": base, "budget_mb": budget, "fits": result["fits"], "reason": result["reason"],
           "summary": result["summary"], "runs": len(result["attempts"]), "fit_s": round(fit_s, 1),
           "attempts": [{k: a[k] for k in ("run_id", "status", "peak_mb", "forecast_mb", "config", "accuracy",
                                           "balanced_accuracy", "samples_per_s")} for a in result["attempts"]],
           "sweep": sweep, "sweep_fitting": len(fitting), "best": best}
    if result["fits"] and best:
        out["balanced_accuracy_given_up"] = round(best["balanced_accuracy"] - final["balanced_accuracy"], 4)
        out["speed_ratio"] = (round(best["samples_per_s"] / final["samples_per_s"], 2)
                              if best["samples_per_s"] and final["samples_per_s"] else None)
    return out


def headline(data: dict) -> dict:
    """The figures of the results: starting points, how many fitted, the runs they took,
    and what fitting gave up against the best fitting sweep point."""
    rows = data["points"]
    fitted = [r for r in rows if r["fits"]]
    given = [r["balanced_accuracy_given_up"] for r in fitted if r.get("balanced_accuracy_given_up") is not None]
    ratios = [r["speed_ratio"] for r in fitted if r.get("speed_ratio")]
    return {"points": len(rows), "fitted": len(fitted),
            "mean_runs": sum(r["runs"] for r in fitted) / len(fitted) if fitted else None,
            "most_runs": max((r["runs"] for r in fitted), default=None),
            "swept_fitting": sum(1 for r in rows if r["best"]),
            "median_given_up": sorted(given)[len(given) // 2] if given else None,
            "worst_given_up": max(given) if given else None,
            "median_speed_ratio": sorted(ratios)[len(ratios) // 2] if ratios else None}


def reference(data: dict) -> Reference:
    """What Learn shows of the results: the headline, on the machine that measured it."""
    m = data["machine"]
    return Reference("fit", f"{m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Python {m['python']}, "
                            f"numpy {m['numpy']}", data["measured"], "python bench/fit.py", data["seconds"],
                     headline(data))


def report(data: dict) -> str:
    rows = data["points"]
    h = headline(data)
    given = (f"; against the sweep's best fitting point it gave up {h['median_given_up']:+.3f} balanced accuracy at "
             f"the median (worst {h['worst_given_up']:+.3f}); the sweep's best ran {h['median_speed_ratio'] or 0:.2f}x as "
             "fast as fit's at the median" if h["median_given_up"] is not None else "")
    lines = [
        "# fit: from a setting that does not fit a budget to one that does", "",
        f"Machine: {data['machine']['cpu']}, {data['machine']['cpus']} CPUs, {data['machine']['memory_gib']} GiB, "
        f"Python {data['machine']['python']}, numpy {data['machine']['numpy']}; load average at start "
        f"{data['machine']['load_avg_at_start']}; measured {data['measured']} in {data['seconds'] / 60:.0f} minutes. "
        "Every attempt and sweep point is a real run, one at a time, under the budget as its memory cap; a run fits "
        "when it completes with its exact peak (VmHWM) at or under the budget. The sweep varies the knobs listed; its "
        "best is the fitting point with the highest balanced accuracy. Speeds are samples/s of the train phase on a "
        "shared machine (other work on the 2 cores): compare within a row only. The on-disk copies (memmap's binary form, "
        "stream's text copy) are built by the first run that needs them and reused by later ones; each starting point "
        "runs fit first (in a fresh data home holding this machine's calibration), and the sweep after it reuses them.",
        "",
        f"**fit ended within the budget from {h['fitted']} of {h['points']} starting points**, in "
        f"{h['mean_runs'] or 0:.1f} runs on average (at most {h['most_runs'] or 0}); the sweep found a fitting point "
        f"for {h['swept_fitting']} of {h['points']}{given}.",
        "",
        "| starting point | budget (MiB) | fit's path | runs | fits | sweep: fitting / points | sweep's best | "
        "balanced accuracy given up | speed: best / fit's |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        best = r["best"]
        best_words = (", ".join(f"{k}={v}" for k, v in best["knobs"].items())
                      + f": {best['peak_mb']:,.0f} MiB, {best['balanced_accuracy']:.3f}") if best else "none fits"
        given = r.get("balanced_accuracy_given_up")
        ratio = r.get("speed_ratio")
        lines.append(f"| {r['name']} | {r['budget_mb']} | {r['summary']} | {r['runs']} | "
                     f"{'yes' if r['fits'] else 'no'} | {r['sweep_fitting']} / {len(r['sweep'])} | {best_words} | "
                     f"{'–' if given is None else f'{given:+.3f}'} | {'–' if ratio is None else f'{ratio:.2f}x'} |")
    lines += ["", "Starting knobs: " + "; ".join(f"{r['name']}: {json.dumps(r['base'])}" for r in rows) + "."]
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--home", default=None, help="a data home with this machine's calibration (made if missing)")
    p.add_argument("--only", default=None, help="comma-separated starting points")
    p.add_argument("--dry", action="store_true", help="print each starting point's forecast and exit")
    p.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    p.add_argument("--report", action="store_true", help="rewrite fit.md from fit.json and exit")
    args = p.parse_args()
    if args.report:
        with open(os.path.join(args.out, "fit.json")) as f:
            data = json.load(f)
        with open(os.path.join(args.out, "fit.md"), "w") as f:
            f.write(report(data))
        write_reference(reference(data))
        return 0
    home = args.home or os.path.join(ROOT, ".svmcore-bench-fit")
    os.makedirs(home, exist_ok=True)
    cal = load_calibration(home) or calibrate(home)
    points = [pt for pt in POINTS if not args.only or pt[0] in args.only.split(",")]
    if args.dry:
        for name, base, budget, knobs in points:
            v = model_view(validate(base), cal, cache_dir=os.path.join(home, "cache"))
            print(f"{name}: forecast {v['peak_mb']:.0f} MiB in {v['peak_phase']} vs budget {budget}; "
                  f"sweep {len(grid(base, knobs))} points")
        return 0
    t0 = time.time()
    data = {"machine": machine(), "measured": time.strftime("%Y-%m-%d"), "points": []}
    for name, base, budget, knobs in points:
        print(f"{name} ...", file=sys.stderr)
        data["points"].append(measure(name, base, budget, knobs, home, cal))
        print("  " + data["points"][-1]["summary"], file=sys.stderr)
    data["seconds"] = round(time.time() - t0)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "fit.json"), "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(args.out, "fit.md"), "w") as f:
        f.write(report(data))
    write_reference(reference(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
