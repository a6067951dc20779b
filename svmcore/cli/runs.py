"""``svmcore runs list|show|export|delete|tag|check|recover``: the run history."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import sys
import time

from svmcore.cli.common import EXIT_BAD_INPUT, _Parser, run_id_arg
from svmcore.cli.run import describe
from svmcore.engine.leftovers import release_leftovers
from svmcore.engine.recovery import recover
from svmcore.spec.names import check_tag, shown
from svmcore.store.damage import damaged_runs, damaged_sweeps
from svmcore.store.export import run_export, samples_csv
from svmcore.store.salvage import salvage
from svmcore.store.sqlite import Store, StoreError


def cmd_runs(args, home: str) -> int:
    store = Store(home)
    recover(store)
    c = args.runs_command
    if c == "check":
        return cmd_runs_check(store, args.json)
    if c == "recover":
        return cmd_runs_recover(store, args.path, args.json)
    if c == "list":
        runs = store.list_runs()
        tags = store.tags()
        rows = [{"id": r.id, "name": r.name, "status": r.status.value, "created_at": r.created_at,
                 "dataset": r.config.get("dataset"), "mode": r.config.get("mode"), "model": r.config.get("model"),
                 "peak_rss_mb": r.summary.peak_rss_mb, "accuracy": r.summary.accuracy,
                 "balanced_accuracy": r.summary.balanced_accuracy,
                 "samples_per_s": r.summary.samples_per_s, "wall_s": r.summary.wall_s, "host": r.host,
                 "tags": tags.get(r.id, []), "damage": list(r.damage), "cap": r.summary.cap, "cap_mb": r.summary.cap_mb,
                 "cgroup_peak_mb": r.summary.cgroup_peak_mb, "cgroup_held_peak_mb": r.summary.cgroup_held_peak_mb,
                 "run_peak_mb": r.summary.run_peak.mb, "run_peak_exact": r.summary.run_peak.exact}
                for r in runs]
        if args.json:
            print(json.dumps(rows))
        else:
            # a file run's dataset by the file's name (its path cut to 14 characters showed the folder)
            names = [os.path.basename(str(r["dataset"])) if r["dataset"] is not None else "-" for r in rows]
            wide = min(40, max([7] + [len(n) for n in names]))
            print(f"{'id':>5} {'status':10} {'created':19} {'dataset':{wide}} {'mode':7} {'model':13} "
                  f"{'peak MiB':>9} {'cap':15} {'held MiB':>8} {'acc':>6} {'bal.acc':>7} {'samples/s':>11}  name [tags]")
            for rec, r, name in zip(runs, rows, names):
                created = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created_at"]))
                           if r["created_at"] is not None else "-")
                # the run's peak: exact, or a data-parallel run's processes summed (sampled: '~')
                peak = f"{'' if r['run_peak_exact'] else '~'}{r['run_peak_mb']:.1f}" if r["run_peak_mb"] else "-"
                acc = f"{r['accuracy']:.3f}" if r["accuracy"] is not None else "-"
                bal = f"{r['balanced_accuracy']:.3f}" if r["balanced_accuracy"] is not None else "-"
                sps = f"{r['samples_per_s']:,.0f}" if r["samples_per_s"] else "-"
                # a name or tag stored before the names rule is escaped: it cannot drive the terminal or forge rows
                tagged = shown(r["name"]) + (f" [{', '.join(shown(t) for t in r['tags'])}]" if r["tags"] else "")
                if r["damage"]:  # its figures are '-': say why
                    tagged += f" DAMAGED: {'; '.join(r['damage'])}"
                # a cgroup cap's figure: the charge the kernel cannot reclaim (sampled); see docs/runs.md
                held = f"{r['cgroup_held_peak_mb']:.1f}" if r["cgroup_held_peak_mb"] is not None else "-"
                cap = rec.summary.cap_text if rec.summary.cap_text != "none" else "-"
                print(f"{r['id']:>5} {r['status']:10} {created:19} {name[:wide]:{wide}} {r['mode'] or '-':7} "
                      f"{r['model'] or '-':13} {peak:>9} {cap:15} {held:>8} {acc:>6} {bal:>7} {sps:>11}  "
                      f"{tagged.strip()}".rstrip())
        return 0
    rec = store.get_run(args.id)
    if rec is None:
        print(f"svmcore: error: no run with id {args.id}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if c == "name":
        store.set_name(args.id, " ".join(args.name))
        name = store.get_run(args.id).name
        print(f"run {args.id} " + (f"is named '{shown(name)}'" if name else "has no name"))
        return 0
    if c == "tag":
        for tag in [t if args.remove else check_tag(t) for t in args.tags]:  # every tag checked before any is stored
            store.tag_run(args.id, tag, remove=args.remove)
        print(f"run {args.id} tags: " + (", ".join(shown(t) for t in store.tags().get(args.id, [])) or "none"))
        return 0
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
            print(describe(dataclasses.replace(rec.summary, run_id=rec.id, status=rec.status), rec.name))
            for line in record["damage"]:
                print(f"  DAMAGED: {line}; shown without it")
            print("  config: " + ", ".join(f"{k}={v}" for k, v in rec.config.items()))
            print(f"  {len(record['samples'])} memory samples, {len(record['events'])} events")
            if rec.summary.trace and rec.summary.trace.file and rec.run_dir:
                path = os.path.join(rec.run_dir, rec.summary.trace.file)
                print(f"  memray's file: {path} (its flame graph: python -m memray flamegraph {path})")
        return 0
    if args.format == "json":
        print(json.dumps(record))
    else:
        sys.stdout.write(samples_csv(record))
    return 0


def _set_aside(store: Store) -> list[str]:
    return sorted(p for p in glob.glob(glob.escape(store.path) + ".damaged-*") if not p.endswith(("-wal", "-shm")))


def cmd_runs_check(store: Store, as_json: bool) -> int:
    """PRAGMA integrity_check of the current store, then every row read as the commands
    read it (exit 1 if either finds damage); lists damaged stores kept aside."""
    problems = store.integrity_problems()
    aside = _set_aside(store)
    runs = damaged_runs(store)
    sweeps = damaged_sweeps(store)
    if as_json:
        print(json.dumps({"path": store.path, "ok": not (problems or runs or sweeps), "problems": problems,
                          "damaged_runs": [r.to_dict() for r in runs], "damaged_sweeps": sweeps,
                          "damaged_files": aside}))
    else:
        if problems:
            print(f"{store.path}: damaged (PRAGMA integrity_check):")
            for line in problems:
                print(f"  {line}")
            print("  the next command that opens it moves it aside if SQLite cannot read it; "
                  "'svmcore runs recover FILE' copies the readable runs from a file set aside")
        else:
            print(f"{store.path}: ok (PRAGMA integrity_check)")
        for r in runs:
            print(f"run {r.id} ({r.status}) is damaged: {'; '.join(r.damage)}")
        for sw in sweeps:
            print(f"sweep {sw['id']} is damaged: {'; '.join(sw['damage'])}")
        if runs or sweeps:
            print(f"  {len(runs)} damaged run(s), {len(sweeps)} damaged sweep(s): listed and shown with what is "
                  "readable; delete a run with 'svmcore runs delete ID'")
        elif not problems:
            print("every run's row, events and samples read: ok")
        for path in aside:
            print(f"damaged store kept aside: {path} (copy its readable runs back: svmcore runs recover {path})")
    return 1 if problems or runs or sweeps else 0


def cmd_runs_recover(store: Store, path: str, as_json: bool) -> int:
    """Copy every readable row of a damaged store file into the current store."""
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


def add_parser(sub) -> None:
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
    nm = rsub.add_parser("name", help="name a run (an empty name removes it)")
    nm.add_argument("id", type=run_id_arg)
    nm.add_argument("name", nargs="*", metavar="NAME")
    tg = rsub.add_parser("tag", help="tag a run (filter and group by tags on Compare)")
    tg.add_argument("id", type=run_id_arg)
    tg.add_argument("tags", nargs="+", metavar="TAG")
    tg.add_argument("--remove", action="store_true", help="remove these tags instead")
    ck = rsub.add_parser("check", help="check the run store file (PRAGMA integrity_check)")
    ck.add_argument("--json", action="store_true")
    rv = rsub.add_parser("recover", help="copy every readable run from a damaged store file into the current store")
    rv.add_argument("path", help="the damaged file, e.g. runs.sqlite.damaged-20250101T120000Z")
    rv.add_argument("--json", action="store_true")
    runs.set_defaults(handler=cmd_runs)
