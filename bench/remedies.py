"""The reference measurement of every remedy the Learn page teaches: each runnable
remedy's before/after experiments, run through the real engine on this machine (the
same Lab calls as the page's "Measure on this machine", one run at a time through
the queue, each pair back to back so that their speeds compare), written with the
machine's description as the package's reference data (svmcore/app/reference_data/
remedies.json, read by ``svmcore.app.reference``) and its table to
bench/results/remedies.md. The Learn page shows it, labelled as the reference
machine's, until a machine has measured its own.

    python bench/remedies.py [--out bench/results] [--only batch,stream] [--quick]

``--only`` re-measures some remedies and keeps the others' results from the existing
file; ``--quick`` divides the rows of synthetic data by ten (not for the committed file);
``--render`` rewrites the .md from the reference data without running anything.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from dataclasses import asdict
from importlib.metadata import version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from svmcore.app.lab import Lab  # noqa: E402
from svmcore.app.learn import THIS_MACHINE  # noqa: E402
from svmcore.app.reference import Reference, read  # noqa: E402
from svmcore.app.remedies import REMEDIES  # noqa: E402
from svmcore.app.remedy_results import CLAIMS_COLUMNS, claims_row, machines, speed_spread  # noqa: E402

# the package's reference data: what the dashboard shows before a machine has measured its own
REFERENCE_DATA = os.path.join(ROOT, "svmcore", "app", "reference_data")


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    return {"cpu": cpu, "cpus": os.cpu_count(), "machine": platform.machine(),
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "kernel": platform.release(), "python": platform.python_version(), "numpy": version("numpy"),
            "scipy": version("scipy"), "scikit-learn": version("scikit-learn")}


def describe(m: dict) -> str:
    return (f"{m['cpu']}, {m['cpus']} CPUs, {m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, "
            f"scikit-learn {m['scikit-learn']}, numpy {m['numpy']}")


def rerender(out: str, stem: str, markdown, reference=None) -> int:
    """A benchmark's ``--render``: its table (and its reference data, ``reference``: the
    function that makes it) written again from its committed figures (``stem.json``)."""
    with open(os.path.join(out, stem + ".json")) as f:
        result = json.load(f)
    write_result(out, stem, result, markdown(result), reference(result) if reference else None)
    return 0


def write_result(out: str, stem: str, data: dict, md: str, reference: Reference | None = None) -> None:
    """A benchmark's figures (``stem.json``) and its table (``stem.md``) under ``out``, and
    what the dashboard reads of it as the package's reference data."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, stem + ".json"), "w") as f:
        json.dump(data, f, indent=1)
    with open(os.path.join(out, stem + ".md"), "w") as f:
        f.write(md)
    if reference:
        write_reference(reference)


def write_reference(ref: Reference, folder: str = REFERENCE_DATA) -> None:
    """A measurement as reference data, in the one format ``svmcore.app.reference`` reads."""
    with open(os.path.join(folder, ref.name + ".json"), "w") as f:
        json.dump(asdict(ref), f, indent=1)
        f.write("\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--only", default="", help="comma-separated remedy keys (the others are kept from --out)")
    ap.add_argument("--quick", action="store_true", help="a tenth of the rows: a smoke test, not a reference")
    ap.add_argument("--render", action="store_true", help="only rewrite the .md from the .json")
    args = ap.parse_args()
    if args.render:
        with open(os.path.join(args.out, "remedies.md"), "w") as f:
            f.write(markdown(read("remedies", REFERENCE_DATA)))
        return 0
    only = {k for k in args.only.split(",") if k}
    previous = dict(read("remedies", REFERENCE_DATA).figures) if only else {}
    home = tempfile.mkdtemp(prefix="svmcore-remedies-")
    lab = Lab(home)
    t0 = time.time()
    for r in REMEDIES:
        if r.runnable and (not only or r.key in only):
            for before, after in lab.learn.run_remedy(r.key, quick=args.quick):
                print(f"queued {r.key}: runs {before} and {after}", flush=True)
    while lab.learn.pending():
        time.sleep(1.0)
    elapsed = time.time() - t0
    measured = dict(previous)
    m = machine()
    today = datetime.date.today().isoformat()
    for x in lab.learn.results():
        if x.source == THIS_MACHINE:  # each pair says where and when it was measured: --only keeps older pairs
            measured.setdefault(x.remedy.key, {})[x.experiment.key] = {
                "before": x.before, "after": x.after, "machine": describe(m), "measured": today}
            print(f"{x.remedy.key:12s} {x.experiment.key:16s} " + " | ".join(
                str(v) for v in list(claims_row(x.remedy, x.experiment, x.as_dict()).values())[3:5]), flush=True)
    data = Reference("remedies", describe(m), today, "python bench/remedies.py" + (" --quick" if args.quick else ""),
                     round(elapsed), measured)
    write_reference(data)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "remedies.md"), "w") as f:
        f.write(markdown(data))
    print(f"wrote {os.path.join(REFERENCE_DATA, 'remedies.json')} ({elapsed:.0f} s of runs)")
    return 0


def markdown(data: Reference) -> str:
    """The claims table as the Learn page shows it, from the reference measurement."""
    from svmcore.app.learn import REFERENCE, ExperimentResult
    from svmcore.app.remedy_results import compare

    spread = speed_spread(data.figures)
    noise = (f" The default setup's speed varied from {spread['min']:,.0f} to {spread['max']:,.0f} samples/s over its "
             f"{spread['runs']} before-runs (other work shared the 2 cores): speed changes within that "
             f"{spread['ratio']:.1f}x are noise here." if spread else "")
    where = machines(data)
    if len(where) == 1:
        (desc, when), = where
        place = f"Machine: {desc}. Measured {when}, {data.seconds} s of runs"
    else:
        place = "Machines (the same class, measured at different times with `--only`): " + "; ".join(
            f"{desc}, {when}: {', '.join(keys)}" for (desc, when), keys in where.items()) + ". Runs"
    lines = ["# The remedies: what the advice claims, what they save here", "",
             f"{place}, one at a "
             "time; each before/after pair back to back. Exact peaks are the kernel's high-water mark; the "
             "anonymous/file-backed split is read from the 50 Hz sample with the highest RSS. A remedy changes only "
             "its own knobs, on stated setups; the default setup is sparse-text, 100,000 rows x 2^20 columns, "
             "sparse, in memory, float64, batch 1,024, 5 epochs. The Learn page shows this table as the reference "
             "machine's until a machine measures its own." + noise, ""]
    cols = [c for c in CLAIMS_COLUMNS if c != "measured on"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in REMEDIES:
        if not r.experiments:
            row = claims_row(r, None, None)
            lines.append("| " + " | ".join(str(row[c]) for c in cols) + " |")
        for e in r.experiments:
            got = data.figures.get(r.key, {}).get(e.key)
            result = None
            if got:
                x = ExperimentResult(r, e, REFERENCE, "reference", got["before"], got["after"],
                                     compare(got["before"], got["after"], r.acts_on))
                result = x.as_dict()
            row = claims_row(r, e, result)
            if got:
                row["setup"] += f": {change_text_of(got)}"
            lines.append("| " + " | ".join(str(row[c]).replace("|", "/") for c in cols) + " |")
    return "\n".join(lines) + "\n"


def change_text_of(pair: dict) -> str:
    from svmcore.app.headlines import change_text
    from svmcore.spec.config import validate

    before, after = (validate(pair[k]["config"]).to_dict() for k in ("before", "after"))
    return change_text(after, before)


if __name__ == "__main__":
    sys.exit(main())
