"""docs/benchmarks.md, generated from the committed results in bench/results/ (never
edited by hand; tests/unit/test_docs.py checks it is up to date).

    python bench/report.py            # rewrite docs/benchmarks.md
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
TARGET = os.path.join(ROOT, "docs", "benchmarks.md")

# (results file, how it is made, what it shows), in reading order; a file not there yet is skipped
SECTIONS = [
    ("compare-1000000.md", "python bench/compare.py (make bench)",
     "This project's modes against scikit-learn and Vowpal Wabbit on one 1M-row file, side by side."),
    ("compare-race-1000000.md", "python bench/compare.py --rows 1000000 --race",
     "Issue 20's fair race: default knobs (alpha chosen for the data) against Vowpal Wabbit at its documented "
     "settings (1 pass; several passes with its holdout) and a scikit-learn LinearSVC/LogisticRegression ceiling."),
    ("compare-race-10000000.md", "python bench/compare.py --rows 10000000 --race",
     "The same race at 10M rows (the ceilings on the first 1M training rows), re-run on 12-04 after the cache fix "
     "(209ca25): every VW row is valid. The lean path leads on accuracy (+1.5 points); its speed here is from "
     "before the spill's reused window (47396b0), when VW's cache passes were faster than its later passes at this "
     "size (compare-lean-10000000.md has the rates after it). VW's cache passes read the cache in file order; the "
     "lean path's later passes shuffle (pieces from across the spill, each window permuted): its default."),
    ("alpha.md", "python bench/alpha.py",
     "The default regularisation (alpha auto; FTRL's l2) against the best of a grid, per solver, on files of "
     "several sizes and shapes, on accuracy and balanced accuracy. Issue 40 added the imbalanced file and the class "
     "balance to alpha auto: there the rule in rows alone (8.5e-6) gave scikit-learn's SGD a balanced accuracy of "
     "0.835 at seed 0, 4.2 points below the grid's best."),
    ("adaptive.md", "python bench/adaptive.py",
     "Per-coordinate AdaGrad updates (with and without normalisation, as Vowpal Wabbit's) against the averaged SGD "
     "at its default alpha, accuracy after each pass: averaged SGD is ahead at every pass, so no adaptive solver "
     "was added."),
    ("compare-lean-1000000.md", "python bench/compare.py --rows 1000000 --goal --repeat 2",
     "The lean path (native parser and solver: numpy and a C library in the worker) against Vowpal Wabbit and the "
     "scikit-learn path with the same knobs, with issue 14's goal ratios and issue 20's raised ones, and beside them "
     "the lean path with the precision knob at float32 (not the goals' knobs). Re-run on 12-05 after the batches "
     "were recycled and the native solver's batches went straight to its kernel, 2 rounds: each goal gives the "
     "fastest run against the fastest and the ratio round by round. VW's cache pass ran 1.0M-2.04M rows/s in the "
     "12-04 and 12-05 runs of this bench: the later-pass ratio moves with it."),
    ("compare-lean-10000000.md", "python bench/compare.py --rows 10000000 --goal --skip-sklearn-path --repeat 3",
     "The same at 10M rows (re-run on 12-06 after the first pass began asking the kernel for each piece of the text "
     "ahead of its turn, 41b11e5), without the scikit-learn path: the accuracy comparison at this size is the race's. "
     "The first pass here reads the 12 GB text from disk (this machine's page cache does not keep it between runs) "
     "while the spill's 5.5 GB are written to the same disk, and a later pass can meet the spill's writeback: read "
     "the per-round ratios with that in mind."),
    ("scaling.md", "python bench/scaling.py",
     "Exact peak and throughput from 10^4 to 10^7 rows in each mode."),
    ("scaling-lean.md", "python bench/scaling.py --modes lean",
     "The lean path's exact peak and throughput from 10^4 rows up."),
    ("label-sorted.md", "python bench/label_sorted.py",
     "Label-sorted files: every mode and the lean pair at default knobs against memory mode. lean-memory and "
     "memory differ by their solver, not their order: scikit-learn's averaged SGD (1.9.1) starts every "
     "partial_fit call's plain intercept from its value after the first call, the compiled solvers carry it from "
     "batch to batch (with it carried, scikit-learn's balanced accuracy on w8a equals the native solver's, 0.810)."),
    ("label-sorted-before-i40.md", "python bench/label_sorted.py --files kinds --rows 50000 --root <6df6f9c> "
                                   "--tag before-i40",
     "The w8a-like file at the commit before issue 40: the spill and memmap's copy in file order, alpha auto "
     "from the rows alone."),
    ("ftrl.md", "python bench/ftrl.py",
     ("FTRL-proximal against scikit-learn's and the compiled SGD: the train phase's exact peak, accuracy and the "
      "model's nonzero weights and sparse size at 2^20 and 2^24 columns, side by side.")),
    ("scoring-memory.md", "python bench/scoring_memory.py",
     ("What live and final scoring cost the compiled solvers (numba SGD, native SGD, FTRL) at 2^24 columns, with "
      "the code before and after they scored from their state, side by side; scikit-learn's SGD for reference.")),
    ("estimate-accuracy.md", "python bench/estimate_accuracy.py",
     "The memory model's forecast against the measured exact peak."),
    ("estimate-accuracy-mlp-numpy-monitor.md", "python bench/estimate_accuracy.py --only mlp-numpy,monitor",
     "The memory model's forecast on the configs of the newest knobs only (mlp-numpy's checkpointing, monitor)."),
    ("checkpointing.md", "python bench/checkpointing.py",
     "Gradient checkpointing in the numpy MLP: exact peaks and train time with k = 0, 2, 4 and sqrt(depth)."),
    ("monitoring.md", "python bench/monitoring.py",
     "What the worker's live monitoring costs (monitor=full, light, off), and the parent's sampler at 5 to 200 Hz."),
    ("estimate-accuracy-solver-numba-solver-ftrl.md", "python bench/estimate_accuracy.py --only solver=numba,solver=ftrl",
     ("The memory model's forecast for the compiled SGD and FTRL runs (calibration version 6: they score without "
      "weight-sized copies, FTRL priced as z and n).")),
    ("estimate-accuracy-workers.md", "python bench/estimate_accuracy.py --only workers",
     "The memory model's forecast for data-parallel runs: the coordinator's and each Dask worker's exact peak."),
    ("ddp.md", "python bench/ddp.py",
     "One model trained by 1, 2 and 4 Dask workers (iterative parameter mixing) against one process: accuracy, "
     "per-worker and total memory, wall time."),
    ("ddp-mixing.md", "python bench/ddp_mixing.py --rows 200000",
     "How often the data-parallel workers' weights are mixed, against accuracy (simulated in one process)."),
    ("estimate-accuracy-native.md", "python bench/estimate_accuracy.py --only native",
     "The memory model's forecast for the lean path."),
    ("trace-overhead.md", "python bench/trace_overhead.py",
     "What the trace knob costs (memray's tracker in the worker): rows/s, exact peak and floor traced against "
     "untraced on the default setup and the lean path, the trace file's size and the parent's time to read it."),
    ("remedies.md", "python bench/remedies.py",
     "Every remedy of the common memory advice, measured before and after on stated setups (the Learn page's "
     "reference)."),
    ("serve.md", "python bench/serve.py",
     ("Train offline, serve light (issue 21): each linear solver's exported model served by `svmcore predict` in "
      "a lean process (numpy and the native library), its exact peak and rows/s against the training run's, and "
      "the model's bytes dense and sparse, float64 and float32.")),
    ("memory-pool.md", "python bench/memory_pool.py",
     ("A memory pool for batches (issue 21), measured before it is built in: reused batch buffers against fresh "
      "arrays per batch on the lean path's loop (the lean worker's malloc settings and glibc's defaults) and the "
      "classic path's (scikit-learn's parser and SGDClassifier, glibc's defaults), with and without malloc_trim. "
      "The pool saves nothing measurable on either path (exact peaks within 0.6 MiB, the same RSS every epoch); "
      "the lean malloc settings save about 2 MiB of peak and the RSS growth after the first epoch.")),
    ("estimate-accuracy-held-out-distill.md", "python bench/estimate_accuracy.py --held-out --only distill",
     "The memory model's forecast for distilled runs (the distill knob), held out of the calibration."),
    ("estimate-accuracy-history-transform-cache.md",
     "python bench/estimate_accuracy.py --only history,transform_cache --calibration-from "
     "bench/results/estimate-accuracy.json",
     "The memory model's forecast for the two accumulation causes (issue 42: a history of batch copies, a cache of "
     "transformed rows), what they keep priced at one byte of RSS a byte in the train phase. A cyclic history "
     "without gc_every is priced as every batch held (up to the collector's 700): an upper bound, since Python's "
     "collector may run sooner."),
    ("distill.md", "python bench/distill.py",
     ("Distillation (issue 21): teachers (kernel-approx, mlp-numpy) trained with `--distill`, their linear-svm "
      "students against the teacher and against the same student trained on the labels alone; the training run's "
      "exact peak, the student served by `svmcore predict`, the teacher's serving lower bound.")),
    ("fit.md", "python bench/fit.py",
     "The diagnosis loop (`fit`) from eight starting points that do not fit a budget: how often it ends within "
     "the budget, in how many runs, and what it gives up against the best fitting point of a small sweep."),
]


def render() -> str:
    out = ["# Benchmarks", "",
           "Generated by `python bench/report.py` from the results committed in `bench/results/`, each with "
           "the machine it ran on. Reproduce a section with the command under its title; the numbers are "
           "that machine's, not yours.", ""]
    for name, how, what in SECTIONS:
        path = os.path.join(RESULTS, name)
        if not os.path.exists(path):
            continue
        with open(path) as f:
            body = f.read().strip().split("\n")
        title = body[0].lstrip("# ").strip()
        out += [f"## {title}", "", f"{what} Made by `{how}`; raw results: [`bench/results/{name}`](../bench/results/{name}).",
                ""] + [line.replace("](scaling.svg)", "](../bench/results/scaling.svg)") for line in body[1:]] + [""]
    return "\n".join(out).rstrip() + "\n"


def main() -> int:
    with open(TARGET, "w") as f:
        f.write(render())
    print(f"wrote {os.path.relpath(TARGET, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
