"""``svmcore predict --model RUN_ID --data FILE``: score a svmlight file with a run's
exported linear model in a lean child process (``svmcore.app.serving``).

Predictions go to stdout (one label a line) or ``--out FILE``; the summary (rows/s,
accuracy when the file has labels, the serving process's exact peak beside the
training run's, the model's size) goes to stderr when the predictions take stdout,
else to stdout; ``--json`` prints it as one JSON line. (``estimate``, ``recommend``
and ``calibrate`` are the memory model's commands, in ``cli/predict.py``.)
"""

from __future__ import annotations

import json
import sys

from svmcore.app.serving import serve, text
from svmcore.cli.common import run_id_arg


def cmd_serve(args, home: str) -> int:
    s = serve(home, args.model, args.data, out=args.out, scores=args.scores)
    sys.stdout.flush()
    stream = sys.stderr if args.out is None else sys.stdout
    print(json.dumps(s) if args.json else text(s), file=stream)
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("predict", help="score a svmlight file with a run's exported model, in a lean process")
    p.add_argument("--model", type=run_id_arg, required=True, metavar="RUN_ID", help="the run whose model scores")
    p.add_argument("--data", required=True, metavar="FILE", help="svmlight rows to score")
    p.add_argument("--out", default=None, metavar="FILE", help="write the predictions here (default: stdout)")
    p.add_argument("--scores", action="store_true", help="each prediction followed by a tab and its score(s)")
    p.add_argument("--json", action="store_true", help="the summary as one JSON line")
    p.set_defaults(handler=cmd_serve)
