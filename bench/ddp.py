"""Data-parallel training on Dask against one process, side by side: for each setup, the
same knobs with workers = 1, 2 and 4 (a LocalCluster of single-threaded worker processes
started for each run), back to back. Per run: accuracy, the single process's exact peak
against each Dask worker's exact peak (VmHWM; their processes start with the run), the
coordinator's exact peak, the total of all processes (sampled at 50 Hz and summed), and
wall time (the train phase, the cluster's start, the epochs themselves).

    python bench/ddp.py [--out bench/results] [--quick] [--only memory-mix4] [--render]

Writes bench/results/ddp.{json,md} with the machine's description and its load average
(the 2-core machine is shared: wall-time ratios are what they were under that load).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from importlib.metadata import version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from svmcore.engine.runner import Run  # noqa: E402
from svmcore.spec.config import validate  # noqa: E402
from svmcore.spec.events import WORKER_MEMORY  # noqa: E402
from svmcore.store.sqlite import Store  # noqa: E402

SETUPS = [
    ("memory", "200k rows in memory, 3 epochs", dict(dataset="sparse-text", rows=200_000, epochs=3)),
    ("stream", "200k rows streamed, 3 epochs", dict(dataset="sparse-text", rows=200_000, epochs=3, mode="stream")),
    ("memory-mix4", "200k rows in memory, 3 epochs, weights mixed every 4 batches",
     dict(dataset="sparse-text", rows=200_000, epochs=3, mix_every=4)),
]
WORKERS = (1, 2, 4)
ACCURACY_GOAL = 0.005  # within half a point of one process


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    return {"cpu": cpu, "cpus": os.cpu_count(), "machine": platform.machine(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "kernel": platform.release(), "python": platform.python_version(), "numpy": version("numpy"),
            "scikit-learn": version("scikit-learn"), "dask": version("dask"), "distributed": version("distributed")}


def measure(store: Store, values: dict) -> dict:
    cfg = validate(values)
    load_before = os.getloadavg()[0]
    run = Run(store, cfg).start()
    status = run.wait(1800)
    s = run.summary.to_dict()  # the summary's JSON, as stored
    par = s.get("parallel") or {}
    epochs_s = None
    if par:
        per_mix: dict[tuple, float] = {}  # the slowest worker of each mix (one per epoch unless mix_every)
        for e in store.events(run.run_id):
            if e["kind"] == WORKER_MEMORY:
                k = (e["epoch"], e.get("mix", 1))
                per_mix[k] = max(per_mix.get(k, 0.0), e["seconds"])
        epochs_s = sum(per_mix.values())
    return {
        "workers": cfg.workers, "status": status.value, "error": (s.get("error") or {}).get("message"),
        "accuracy": s.get("accuracy"), "balanced_accuracy": s.get("balanced_accuracy"),
        "peak_mb": s.get("peak_rss_mb"), "peak_phase": s.get("peak_phase"),
        "worker_peaks_mb": [w["peak_rss_mb"] for w in par.get("per_worker", [])],
        "worker_peak_exact": all(w["peak_exact"] for w in par.get("per_worker", [])) if par else None,
        "total_sampled_mb": par.get("total_peak_sampled_mb"),
        "train_s": s.get("train_s"), "wall_s": s.get("wall_s"), "cluster_start_s": par.get("cluster_start_s"),
        "slowest_worker_epochs_s": epochs_s, "load_average_at_start": round(load_before, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--quick", action="store_true", help="a tenth of the rows: a smoke test, not a reference")
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the existing .json")
    ap.add_argument("--only", default="", help="comma-separated setup keys (the others are kept from --out)")
    args = ap.parse_args()
    if args.render:
        with open(os.path.join(args.out, "ddp.json")) as f:
            data = json.load(f)
        with open(os.path.join(args.out, "ddp.md"), "w") as f:
            f.write(markdown(data))
        return 0
    home = tempfile.mkdtemp(prefix="svmcore-ddp-")
    store = Store(home)
    only = {k for k in args.only.split(",") if k}
    kept: dict = {}
    if only and os.path.exists(os.path.join(args.out, "ddp.json")):
        with open(os.path.join(args.out, "ddp.json")) as f:
            kept = {s["key"]: s for s in json.load(f)["setups"]}
    results = []
    t0 = time.time()
    for key, title, base in SETUPS:
        if only and key not in only:
            if key in kept:
                results.append(kept[key])
            continue
        if args.quick:
            base = dict(base, rows=base["rows"] // 10)
        rows = []
        for n in WORKERS:
            r = measure(store, dict(base, workers=n))
            rows.append(r)
            print(f"{key} workers={n}: {r['status']} acc {r['accuracy']} peak {r['peak_mb']} workers "
                  f"{r['worker_peaks_mb']} total {r['total_sampled_mb']} train {r['train_s']}", flush=True)
        results.append({"key": key, "title": title, "knobs": base, "runs": rows})
    data = {"machine": machine(), "elapsed_s": time.time() - t0, "load_average_at_end": os.getloadavg(),
            "setups": results, "quick": args.quick}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "ddp.json"), "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(args.out, "ddp.md"), "w") as f:
        f.write(markdown(data))
    return 0


def _f(v, spec=",.0f", none="–"):
    return none if v is None else format(v, spec)


def markdown(data: dict) -> str:
    m = data["machine"]
    loads = [r["load_average_at_start"] for s in data["setups"] for r in s["runs"]]
    out = ["# Data-parallel training on Dask against one process", "",
           f"Machine: {m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, "
           f"scikit-learn {m['scikit-learn']}, Dask {m['distributed']}. Each setup's runs ran back to back; the "
           f"machine was shared with other work (1-minute load average {min(loads):.1f}–{max(loads):.1f} at the "
           "runs' starts on 2 cores), so wall times are what they were under that contention: on 2 shared cores "
           "more workers cannot run faster.", "",
           "Workers are a LocalCluster of single-threaded processes started for each run (children of the run's "
           "process). *One process* is the run's exact peak (VmHWM). *Largest worker* is the largest Dask "
           "worker's exact peak (VmHWM: its process began with the run). *Coordinator* is the run's own process "
           "(the shards' writer, Dask's scheduler, nannies and client, the evaluation), exact. *All together* is "
           "the coordinator's and every worker's RSS sampled at 50 Hz and summed at each instant (sampled). "
           "*Train* is the train phase (it includes starting the cluster); *epochs* is the slowest worker's "
           "training time summed over epochs (and mixes).", ""]
    if data.get("quick"):
        out += ["**Quick run (a tenth of the rows): a smoke test, not a reference.**", ""]
    for s in data["setups"]:
        one = s["runs"][0]
        out += [f"## {s['title']}", "", "`" + " ".join(f"--{k.replace('_', '-')}={v}" for k, v in s["knobs"].items())
                + "`", "",
                "| workers | status | accuracy (vs 1) | one process / coordinator MiB | largest worker MiB | "
                "all together MiB | train s | cluster start s | epochs s |", "|---|---|---|---|---|---|---|---|---|"]
        for r in s["runs"]:
            d = (r["accuracy"] - one["accuracy"]) if None not in (r["accuracy"], one["accuracy"]) else None
            acc = _f(r["accuracy"], ".4f") + (f" ({d * 100:+.2f} pt)" if d is not None and r["workers"] > 1 else "")
            worker = _f(max(r["worker_peaks_mb"]) if r["worker_peaks_mb"] else None)
            total = r["total_sampled_mb"] if r["workers"] > 1 else r["peak_mb"]
            out.append(f"| {r['workers']} | {r['status']} | {acc} | {_f(r['peak_mb'])} | {worker} | "
                       f"{_f(total)} | {_f(r['train_s'], '.1f')} | "
                       f"{_f(r['cluster_start_s'], '.1f')} | {_f(r['slowest_worker_epochs_s'], '.1f')} |")
        out.append("")
        for r in s["runs"][1:]:
            if r["accuracy"] is None or one["accuracy"] is None:
                continue
            d = abs(r["accuracy"] - one["accuracy"])
            out.append(f"- {r['workers']} workers: accuracy {'within' if d <= ACCURACY_GOAL else 'NOT within'} half a "
                       f"point of one process ({d * 100:.2f} pt); the largest worker peaked at "
                       f"{_f(max(r['worker_peaks_mb']))} MiB against one process's {_f(one['peak_mb'])} MiB "
                       f"(linear would be {_f(one['peak_mb'] / r['workers'])}).")
        out.append("")
    out += ["By default the weights are mixed after every epoch; `--mix-every K` mixes every K batches of each "
            "shard (the last setup), shipping the model (24 MiB for 2^20 columns with averaging) to and from "
            "every worker at each mix. A one-process simulation with the same mixing shows how accuracy "
            "depends on how often (`bench/results/ddp-mixing.md`).", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    sys.exit(main())
