"""``svmcore data make|inspect``: write synthetic datasets, describe any dataset."""

from __future__ import annotations

import json
import os

from svmcore.cli.common import _Parser
from svmcore.data.files import inspect_dataset, make_dataset


def cmd_data(args, home: str) -> int:
    if args.data_command == "make":
        rows = make_dataset(args.kind, rows=args.rows, features=args.features, nnz_per_row=args.nnz_per_row,
                            seed=args.seed, out=args.out, fmt=args.format,
                            positive_fraction=args.positive_fraction, sort_by_label=args.sort_by_label)
        print(f"wrote {rows:,} rows to {args.out}")
        return 0
    info = inspect_dataset(args.dataset, cache_dir=os.path.join(home, "cache"))
    if args.json:
        print(json.dumps(info))
    else:
        for k, v in info.items():
            print(f"{k:24s} {v}")
    return 0


def add_parser(sub) -> None:
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
    mk.set_defaults(handler=cmd_data, uses_home=False)
    ins = dsub.add_parser("inspect", help="rows, features, nonzeros, classes and size in memory")
    ins.add_argument("dataset")
    ins.add_argument("--json", action="store_true")
    ins.set_defaults(handler=cmd_data, writes_home=True)
