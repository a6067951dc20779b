"""Command line: ``python -m svmcore run|sweep|data|runs ...``.

Run flags are generated from the knob registry. Exit status of ``run``:
0 completed, 1 failed, 2 bad input, 3 oom, 4 cancelled.
"""

from __future__ import annotations

import argparse
import csv
import glob
import io
import json
import logging
import os
import signal
import sqlite3
import sys
import time

from .config import RunConfig, validate
from .errors import ConfigError, SvmcoreError
from .knobs import KNOBS
from .metrics import near_baseline
from .store import RunStatus, Store, StoreError

EXIT = {RunStatus.COMPLETED: 0, RunStatus.FAILED: 1, RunStatus.OOM: 3, RunStatus.CANCELLED: 4,
        RunStatus.LOST: 1}
EXIT_BAD_INPUT = 2

log = logging.getLogger(__name__)


def default_home() -> str:
    return os.environ.get("SVMCORE_HOME") or os.path.join(os.getcwd(), ".svmcore")


class _HelpFormatter(argparse.HelpFormatter):
    def _format_action_invocation(self, action):
        if isinstance(action, _BoolKnobAction):  # --average [true|false], --no-average
            return f"{action.option_strings[0]} [{action.metavar}], " + ", ".join(action.option_strings[1:])
        return super()._format_action_invocation(action)


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"svmcore: {record.levelname.lower()}: {record.getMessage()}".replace("\n", " ")


def _log_to_stderr() -> None:
    """svmcore's warnings (a damaged store moved aside, a cgroup left behind) as one
    line each on stderr."""
    logger = logging.getLogger("svmcore")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_OneLine())
        logger.addHandler(handler)
        logger.setLevel(logging.WARNING)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # one clear line, no usage dump
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")


class _BoolKnobAction(argparse.Action):
    """A bool knob as ``--average``, ``--average VALUE`` / ``--average=VALUE`` (true, false,
    yes, no, 1, 0, on, off: checked by ``validate`` like any knob value) or ``--no-average``."""

    def __init__(self, option_strings, dest, **kwargs):
        flags = [f for s in option_strings for f in (s, "--no-" + s[2:])]
        super().__init__(flags, dest, nargs="?", metavar="true|false", **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string.startswith("--no-"):
            if values is not None:
                parser.error(f"{option_string} takes no value (or use --{option_string[5:]}={values})")
            setattr(namespace, self.dest, False)
        else:
            setattr(namespace, self.dest, True if values is None else values)

    def format_usage(self) -> str:
        return " | ".join(self.option_strings)


def add_knob_flags(p: argparse.ArgumentParser) -> None:
    for k in KNOBS.values():
        help_text = f"{k.help} [{k.describe_allowed()}; default {k.default}]"
        if k.type is bool:
            p.add_argument(k.flag, dest=k.name, action=_BoolKnobAction,
                           default=argparse.SUPPRESS, help=help_text)
        else:
            p.add_argument(k.flag, dest=k.name, default=argparse.SUPPRESS, metavar=k.unit.upper() or "VALUE",
                           help=help_text.replace("%", "%%"))


MAX_RUN_ID = 2**63 - 1  # SQLite's largest INTEGER PRIMARY KEY


def run_id_arg(text: str) -> int:
    """A run id from the command line: a whole number SQLite can hold (1 .. 2^63-1)."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= MAX_RUN_ID:
        raise argparse.ArgumentTypeError(f"run ids are whole numbers from 1 to {MAX_RUN_ID}; got {text[:40]!r}")
    return value


def knob_values(args: argparse.Namespace) -> dict:
    return {k: getattr(args, k) for k in KNOBS if hasattr(args, k)}


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="svmcore", description="SVM Memory Lab: measured training runs.")
    p.add_argument("--home", default=None, help="data folder (default $SVMCORE_HOME or ./.svmcore)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="train once in a child process and measure it")
    add_knob_flags(r)
    r.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    r.add_argument("--json", action="store_true", help="print the summary as one JSON line at the end")

    sw = sub.add_parser("sweep", help="run a grid of settings, one run at a time (per Dask worker with --executor dask)")
    add_knob_flags(sw)
    sw.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    sw.add_argument("--grid", action="append", default=[], metavar="KNOB=V1,V2",
                    help="a knob and the values to try; repeat for more knobs")
    sw.add_argument("--executor", choices=["local", "dask"], default="local",
                    help="local: one run at a time on this machine (default); dask: one task per run on a "
                         "dask.distributed cluster, one run per Dask worker at a time")
    sw.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                    help="the Dask scheduler (with --executor dask); unset: a local cluster on this machine")
    sw.add_argument("--json", action="store_true")

    es = sub.add_parser("estimate", help="predict a run's exact peak and its parts before running it")
    add_knob_flags(es)
    es.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    es.add_argument("--json", action="store_true")
    rc = sub.add_parser("recommend", help="the setting expected to do best within a memory budget")
    add_knob_flags(rc)
    rc.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    rc.add_argument("--budget-mb", dest="budget_mb", type=float, required=True, metavar="MiB")
    rc.add_argument("--objective", choices=["accuracy", "balanced_accuracy", "throughput"], default="accuracy")
    rc.add_argument("--verify", action="store_true", help="run the recommended setting and compare")
    rc.add_argument("--json", action="store_true")
    ca = sub.add_parser("calibrate", help="(re)fit the memory model on this machine (~2-3 minutes)")
    ca.add_argument("--home", dest="home_sub", default=None, help=argparse.SUPPRESS)
    ca.add_argument("--json", action="store_true")

    d = sub.add_parser("data", help="make or inspect datasets")
    dsub = d.add_subparsers(dest="data_command", required=True, parser_class=_Parser)
    mk = dsub.add_parser("make", help="write a synthetic dataset without holding it in memory")
    mk.add_argument("kind", choices=["sparse-text", "dense"])
    mk.add_argument("--rows", default="100000")
    mk.add_argument("--features", default=None)
    mk.add_argument("--nnz-per-row", dest="nnz_per_row", default="50")
    mk.add_argument("--seed", default="0")
    mk.add_argument("--out", required=True)
    mk.add_argument("--format", choices=["svmlight", "npz", "text"], default="svmlight")
    mk.add_argument("--positive-fraction", dest="positive_fraction", default="0.5",
                    help="share of positive rows, 0.001 to 0.5 (sparse-text; default 0.5: balanced)")
    mk.add_argument("--sort-by-label", dest="sort_by_label", action="store_true",
                    help="write every positive row first, as many public libsvm files are")
    ins = dsub.add_parser("inspect", help="rows, features, nonzeros, classes and size in memory")
    ins.add_argument("dataset")
    ins.add_argument("--json", action="store_true")

    kn = sub.add_parser("knobs", help="list every knob: allowed values, default, what it trades")
    kn.add_argument("--markdown", action="store_true", help="as a Markdown table (the README's)")

    runs = sub.add_parser("runs", help="the run history")
    rsub = runs.add_subparsers(dest="runs_command", required=True, parser_class=_Parser)
    ls = rsub.add_parser("list")
    ls.add_argument("--json", action="store_true")
    show = rsub.add_parser("show")
    show.add_argument("id", type=run_id_arg)
    show.add_argument("--json", action="store_true")
    ex = rsub.add_parser("export")
    ex.add_argument("id", type=run_id_arg)
    ex.add_argument("--format", choices=["csv", "json"], default="json")
    de = rsub.add_parser("delete")
    de.add_argument("id", type=run_id_arg)
    ck = rsub.add_parser("check", help="check the run store file (PRAGMA integrity_check)")
    ck.add_argument("--json", action="store_true")
    rv = rsub.add_parser("recover", help="copy every readable run from a damaged store file into the current store")
    rv.add_argument("path", help="the damaged file, e.g. runs.sqlite.damaged-20250101T120000Z")
    rv.add_argument("--json", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    home = getattr(args, "home_sub", None) or args.home or default_home()
    _log_to_stderr()
    try:
        if args.command != "knobs" and not (args.command == "data" and args.data_command == "make"):
            # the data home must be a folder; commands that cache or calibrate must be able to write in it
            check_home(home, write=args.command in ("estimate", "recommend", "calibrate")
                       or args.command == "data")
        if args.command == "run":
            return cmd_run(args, home)
        if args.command == "sweep":
            from .sweep import cmd_sweep
            return cmd_sweep(args, home)
        if args.command == "data":
            return cmd_data(args, home)
        if args.command in ("estimate", "recommend", "calibrate"):
            return cmd_predict(args, home)
        if args.command == "knobs":
            print(knobs_table(markdown=args.markdown))
            return 0
        return cmd_runs(args, home)
    except (SvmcoreError, StoreError) as e:
        print(f"svmcore: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except sqlite3.DatabaseError as e:  # damaged after it was opened (opening moves a damaged store aside)
        print(f"svmcore: error: the run store could not be read ({e}); run the command again to move "
              "the damaged store aside, or 'svmcore runs check'", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 1
    except OSError as e:  # a file or folder we were pointed at cannot be used: one line, not a traceback
        log.debug("command failed", exc_info=True)
        where = ": " + " -> ".join(str(f) for f in (e.filename, e.filename2) if f) if e.filename else ""
        print(f"svmcore: error: {e.strerror or e}{where}", file=sys.stderr)
        return EXIT_BAD_INPUT


def check_home(home: str, write: bool = False) -> None:
    """The data home must be a folder (or creatable as one); with ``write``, a folder we
    can write in. Raises ConfigError('home', ...) with one clear sentence."""
    hint = "set SVMCORE_HOME or --home to a folder you can write to"
    if os.path.exists(home) and not os.path.isdir(home):
        raise ConfigError("home", f"the data home {home} is a file, not a folder; {hint}")
    existing = os.path.abspath(home)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise ConfigError("home", f"the data home {home} cannot be created: {existing} is a file, not a folder; {hint}")
    if write and not os.access(existing, os.W_OK | os.X_OK):
        what = "is read-only" if existing == os.path.abspath(home) else f"cannot be created: {existing} is read-only"
        raise ConfigError("home", f"the data home {home} {what}; {hint}")


# ---------------------------------------------------------------- estimate, recommend

def calibration(home: str, force: bool = False, quiet: bool = False):
    from . import estimate
    cal = None if force else estimate.load_calibration(home)
    if cal is None:
        def progress(i, n, cfg):
            if not quiet and cfg is not None:
                print(f"calibrating the memory model on this machine, once: run {i + 1}/{n}", file=sys.stderr)
        cal = estimate.calibrate(home, progress)
    return cal


def cmd_predict(args, home: str) -> int:
    from . import estimate
    if args.command == "calibrate":
        cal = calibration(home, force=True, quiet=args.json)
        print(json.dumps(cal.to_dict()) if args.json else
              f"calibrated from {cal.runs} runs; floors (MiB): "
              + ", ".join(f"{k} {v:.0f}" for k, v in cal.floors.items()))
        return 0
    values = knob_values(args)
    cfg = validate(values)
    cal = calibration(home, quiet=args.json)
    cache_dir = os.path.join(home, "cache")
    if args.command == "estimate":
        pred = estimate.predict(cfg, cal, cache_dir=cache_dir)
        if args.json:
            print(json.dumps(pred))
        else:
            print(f"predicted exact peak: {pred['predicted_peak_mb']:.0f} MiB, in {pred['peak_phase']}")
            if pred.get("predicted_train_s") is not None:
                print(f"train phase: {estimate.duration_text(pred['predicted_train_s'])} "
                      "(a rough forecast from the calibration runs' per-sample and per-step costs)")
            print("  " + ", ".join(f"{k} {v:.0f}" for k, v in pred["parts"].items() if v) + " (MiB)")
            for ph, v in pred["phases"].items():
                print(f"  {ph:9s} {v['predicted_mb']:8.0f} MiB")
        return 0
    from .recommend import recommend
    store = Store(home)
    result = recommend(values, args.budget_mb, cal, args.objective, cache_dir, store.list_runs())
    code = 0 if result["fits"] else 1
    if result["fits"] and args.verify:
        from .datasets import preflight
        best = validate(result["config"])
        preflight(best, cache_dir)
        run = execute(best, home, show_progress=not args.json and sys.stderr.isatty())
        s = run.summary
        measured = s.get("peak_rss_mb")
        result["verified"] = {
            "run_id": run.run_id, "status": run.status.value, "peak_rss_mb": measured,
            "accuracy": s.get("accuracy"), "samples_per_s": s.get("samples_per_s"),
            "within_budget": bool(measured is not None and measured <= args.budget_mb),
            "prediction_error": (result["predicted_peak_mb"] / measured - 1) if measured else None}
        code = 0 if result["verified"]["within_budget"] and run.status == RunStatus.COMPLETED else 1
    if args.json:
        print(json.dumps(result))
    elif not result["fits"]:
        print(result["message"])
    else:
        print(f"best for {args.objective} within {args.budget_mb:g} MiB "
              f"(of {result['fitting']} fitting / {result['candidates']} candidates):")
        print("  " + " ".join(f"--{k.replace('_', '-')}={v}" for k, v in result["changed"].items()) or "  (as given)")
        print(f"  predicted exact peak {result['predicted_peak_mb']:.0f} MiB; {result['basis']}")
        if "verified" in result:
            v = result["verified"]
            print(f"  verified: run {v['run_id']} {v['status']}, exact peak {v['peak_rss_mb']:.0f} MiB "
                  f"({'within' if v['within_budget'] else 'OVER'} budget), accuracy {v['accuracy']}")
    return code


# ---------------------------------------------------------------- run

def _bar(run) -> str:
    snap = run.snapshot()
    progress = next((e for e in reversed(snap.events) if e["kind"] == "progress"), None)
    acc = next((e["accuracy"] for e in reversed(snap.events) if e["kind"] == "eval"), None)
    rss = snap.samples[-1].rss_bytes / 2**20 if snap.samples else 0
    peak = max((s.hwm_bytes for s in snap.samples), default=0) / 2**20
    frac = 0.0
    if progress and progress.get("total"):
        frac = min(1.0, progress["samples"] / progress["total"])
    width = 24
    filled = int(frac * width)
    parts = [f"[{'#' * filled}{'-' * (width - filled)}] {frac * 100:5.1f}%", f"{snap.phase or '...':9s}",
             f"RSS {rss:7.1f} MiB (peak {peak:7.1f})"]
    if progress:
        parts.append(f"{progress['samples']:,} samples")
    if acc is not None:
        parts.append(f"acc {acc:.3f}")
    parts.append(f"{snap.elapsed_s:6.1f}s")
    return "  ".join(parts)


def execute(cfg: RunConfig, home: str, show_progress: bool, sweep_id: int | None = None):
    """Start a run, show progress, cancel it on Ctrl-C/SIGTERM; returns the finished Run."""
    from .runner import Run, recover

    store = Store(home)
    recover(store)
    run = Run(store, cfg, sweep_id=sweep_id).start()
    previous = {}

    def on_signal(signum, frame):
        run.cancel()

    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, on_signal)
    try:
        while not run.is_finished():
            run.wait(0.25 if show_progress else 1.0)
            if show_progress:
                sys.stderr.write("\r" + _bar(run)[:160])
                sys.stderr.flush()
        if show_progress:
            sys.stderr.write("\r" + _bar(run)[:160] + "\n")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return run


def warn_before_launch(cfg: RunConfig, home: str) -> None:
    """Print on stderr why the run may not fit or may take long (never blocks it)."""
    from . import estimate
    from .hostinfo import available_memory_bytes

    for text in estimate.launch_warnings(cfg, estimate.launch_forecast(cfg, home), available_memory_bytes()):
        print(f"svmcore: warning: {text}", file=sys.stderr)


def describe(summary: dict) -> str:
    status = summary.get("status")
    lines = [f"run {summary.get('run_id')}: {status}"]
    if summary.get("error"):
        lines.append(f"  {summary['error'].get('type')}: {summary['error'].get('message')}"
                     + (f" (in phase {summary.get('phase')})" if summary.get("phase") else ""))

    def fmt(v, unit="", spec=".1f"):
        return "n/a" if v is None else f"{v:{spec}}{unit}"

    lines.append(f"  peak RSS {fmt(summary.get('peak_rss_mb'), ' MiB')} exact (kernel high-water mark); "
                 f"sampled max {fmt(summary.get('peak_sampled_mb'), ' MiB')} at {summary.get('sample_hz')} Hz; "
                 f"floor {fmt(summary.get('floor_mb'), ' MiB')}; cap {summary.get('cap')}")
    lines.append(f"  wall {fmt(summary.get('wall_s'), ' s')}, train {fmt(summary.get('train_s'), ' s')}, "
                 f"{fmt(summary.get('samples_per_s'), ' samples/s', ',.0f')}")
    lines.append(f"  accuracy {fmt(summary.get('accuracy'), '', '.4f')}, "
                 f"balanced accuracy {fmt(summary.get('balanced_accuracy'), '', '.4f')}, "
                 f"F1 ({summary.get('f1_of') or '-'}) {fmt(summary.get('f1'), '', '.4f')}; "
                 f"always predicting the majority class would score {fmt(summary.get('baseline_accuracy'), '', '.4f')}")
    if near_baseline(summary.get("accuracy"), summary.get("baseline_accuracy")):
        lines.append("  WARNING: accuracy is within 2 points of the majority-class baseline; "
                     "the model may not have learnt the minority class (see balanced accuracy)")
    for ph in summary.get("phases") or []:
        lines.append(f"    {ph['name']:10s} {fmt(ph.get('wall_s'), ' s', '8.2f')}  peak {fmt(ph.get('peak_rss_mb'), ' MiB', '8.1f')}"
                     + ("   <- owns the peak" if ph["name"] == summary.get("peak_phase") else ""))
    return "\n".join(lines)


def cmd_run(args, home: str) -> int:
    from .datasets import preflight

    cfg = validate(knob_values(args))
    preflight(cfg, os.path.join(home, "cache"))  # what only the data can refuse: exit 2, nothing stored
    warn_before_launch(cfg, home)
    run = execute(cfg, home, show_progress=sys.stderr.isatty() and not args.json)
    summary = run.summary
    err = summary.get("error") or {}
    if run.status == RunStatus.FAILED and err.get("bad_input"):
        print(f"svmcore: error: {err.get('message')}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    else:
        code = EXIT.get(run.status, 1)
    if args.json:
        print(json.dumps(summary))
    else:
        print(describe(summary))
    return code


# ---------------------------------------------------------------- data

def cmd_data(args, home: str) -> int:
    if args.data_command == "make":
        from .datasets_io import make_dataset
        rows = make_dataset(args.kind, rows=args.rows, features=args.features, nnz_per_row=args.nnz_per_row,
                            seed=args.seed, out=args.out, fmt=args.format,
                            positive_fraction=args.positive_fraction, sort_by_label=args.sort_by_label)
        print(f"wrote {rows:,} rows to {args.out}")
        return 0
    from .datasets_io import inspect_dataset
    info = inspect_dataset(args.dataset, cache_dir=os.path.join(home, "cache"))
    if args.json:
        print(json.dumps(info))
    else:
        for k, v in info.items():
            print(f"{k:24s} {v}")
    return 0


def knobs_table(markdown: bool = True) -> str:
    rows = []
    for k in KNOBS.values():
        default = "unset" if k.default is None else k.default
        rows.append((f"`{k.flag}`", k.describe_allowed(), str(default), k.help, k.trades))
    if not markdown:
        return "\n\n".join(f"{r[0]} ({r[1]}; default {r[2]})\n  {r[3]}\n  trades: {r[4]}" for r in rows)
    out = ["| flag | allowed | default | what it does | what it trades |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


# ---------------------------------------------------------------- runs

def cmd_runs(args, home: str) -> int:
    from .runner import recover, release_leftovers

    store = Store(home)
    recover(store)
    c = args.runs_command
    if c == "check":
        return cmd_runs_check(store, args.json)
    if c == "recover":
        return cmd_runs_recover(store, args.path, args.json)
    if c == "list":
        runs = store.list_runs()
        rows = [{"id": r.id, "status": r.status.value, "created_at": r.created_at,
                 "dataset": r.config.get("dataset"), "mode": r.config.get("mode"), "model": r.config.get("model"),
                 "peak_rss_mb": r.summary.get("peak_rss_mb"), "accuracy": r.summary.get("accuracy"),
                 "balanced_accuracy": r.summary.get("balanced_accuracy"),
                 "samples_per_s": r.summary.get("samples_per_s"), "wall_s": r.summary.get("wall_s"), "host": r.host}
                for r in runs]
        if args.json:
            print(json.dumps(rows))
        else:
            print(f"{'id':>5} {'status':10} {'created':19} {'dataset':14} {'mode':7} {'model':13} "
                  f"{'peak MiB':>9} {'acc':>6} {'bal.acc':>7} {'samples/s':>11}")
            for r in rows:
                created = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created_at"]))
                peak = f"{r['peak_rss_mb']:.1f}" if r["peak_rss_mb"] else "-"
                acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
                bal = f"{r['balanced_accuracy']:.3f}" if r["balanced_accuracy"] is not None else "-"
                sps = f"{r['samples_per_s']:,.0f}" if r["samples_per_s"] else "-"
                print(f"{r['id']:>5} {r['status']:10} {created:19} {str(r['dataset'])[:14]:14} {r['mode']:7} "
                      f"{r['model']:13} {peak:>9} {acc:>6} {bal:>7} {sps:>11}")
        return 0
    rec = store.get_run(args.id)
    if rec is None:
        print(f"svmcore: error: no run with id {args.id}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if c == "delete":
        if not rec.status.is_finished():
            print(f"svmcore: error: run {args.id} is still {rec.status.value}; cancel it first", file=sys.stderr)
            return EXIT_BAD_INPUT
        store.delete_run(args.id)
        release_leftovers(rec.run_dir, store.home, delete_folder=True)
        print(f"deleted run {args.id}")
        return 0
    record = run_export(store, args.id)
    if c == "show":
        if args.json:
            print(json.dumps(record))
        else:
            print(describe(rec.summary or {"run_id": rec.id, "status": rec.status.value}))
            print("  config: " + ", ".join(f"{k}={v}" for k, v in rec.config.items()))
            print(f"  {len(record['samples'])} memory samples, {len(record['events'])} events")
        return 0
    if args.format == "json":
        print(json.dumps(record))
    else:
        sys.stdout.write(samples_csv(record))
    return 0


def _set_aside(store: Store) -> list[str]:
    return sorted(p for p in glob.glob(glob.escape(store.path) + ".damaged-*") if not p.endswith(("-wal", "-shm")))


def cmd_runs_check(store: Store, as_json: bool) -> int:
    """PRAGMA integrity_check of the current store; lists damaged stores kept aside."""
    problems = store.integrity_problems()
    aside = _set_aside(store)
    if as_json:
        print(json.dumps({"path": store.path, "ok": not problems, "problems": problems, "damaged_files": aside}))
    else:
        if problems:
            print(f"{store.path}: damaged (PRAGMA integrity_check):")
            for line in problems:
                print(f"  {line}")
            print("  the next command that opens it moves it aside if SQLite cannot read it; "
                  "'svmcore runs recover FILE' copies the readable runs from a file set aside")
        else:
            print(f"{store.path}: ok (PRAGMA integrity_check)")
        for path in aside:
            print(f"damaged store kept aside: {path} (copy its readable runs back: svmcore runs recover {path})")
    return 1 if problems else 0


def cmd_runs_recover(store: Store, path: str, as_json: bool) -> int:
    """Copy every readable row of a damaged store file into the current store."""
    from .salvage import salvage

    path = os.path.abspath(path)
    if os.path.exists(path) and os.path.samefile(path, store.path):
        raise StoreError(f"{path} is the current run store; recover from a damaged copy set aside "
                         "(runs.sqlite.damaged-...)")
    tables = salvage(path)
    rows = {name: [t.rows[k] for k in sorted(t.rows)] for name, t in tables.items()}
    result = store.import_rows(rows["runs"], rows["samples"], rows["events"], rows["sweeps"])
    result["source"] = path
    result["read"] = {name: {"readable": len(t.rows), "unreadable": t.unreadable, "more_unreadable": t.unbounded,
                             "lost_pages": t.lost_pages} for name, t in tables.items()}
    if as_json:
        print(json.dumps(result))
        return 0
    print(f"recovered from {path} into {store.path}:")
    for name in ("runs", "samples", "events", "sweeps"):
        read = result["read"][name]
        unreadable = f"{read['unreadable']:,}{' or more' if read['more_unreadable'] else ''}"
        extra = []
        if result["already_present"].get(name):
            extra.append(f"{result['already_present'][name]:,} already there")
        if result["without_run"].get(name):
            extra.append(f"{result['without_run'][name]:,} of runs that were not recovered")
        print(f"  {name:8s} {result[name]:>8,} recovered, {unreadable} unreadable"
              + (f" ({read['lost_pages']:,} pages lost)" if read["lost_pages"] else "")
              + (f"; skipped {', '.join(extra)}" if extra else ""))
    if result["run_ids"]:
        print("  new ids (old -> new): " + ", ".join(f"{o} -> {n}" for o, n in result["run_ids"].items()))
    return 0


def run_export(store: Store, run_id: int) -> dict:
    """Everything about one run as plain data: config, summary, samples, events."""
    rec = store.get_run(run_id)
    return {"id": rec.id, "status": rec.status.value, "created_at": rec.created_at, "finished_at": rec.finished_at,
            "host": rec.host, "host_cpus": rec.host_cpus, "host_memory_bytes": rec.host_memory_bytes,
            "config": rec.config, "summary": rec.summary,
            "samples": [dict(zip(("t_s", "rss_bytes", "anon_bytes", "file_bytes", "hwm_bytes"), s))
                        for s in store.samples(run_id)],
            "events": store.events(run_id)}


def samples_csv(record: dict) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["run_id", "t_s", "rss_bytes", "anon_bytes", "file_bytes", "hwm_bytes"])
    for s in record["samples"]:
        w.writerow([record["id"], f"{s['t_s']:.4f}", s["rss_bytes"], s["anon_bytes"], s["file_bytes"], s["hwm_bytes"]])
    return buf.getvalue()
