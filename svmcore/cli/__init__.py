"""Command line: ``python -m svmcore run|sweep|estimate|recommend|calibrate|predict|data|knobs|runs|doctor|fit``.

One module per subcommand, each with ``add_parser(subparsers)``; nothing imports this
package. Run flags are generated from the knob registry. Exit status of ``run``:
0 completed, 1 failed, 2 bad input, 3 oom, 4 cancelled.
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
import sys

from svmcore.cli.common import (
    EXIT_BAD_INPUT,
    _log_to_stderr,
    _Parser,
    check_home,
    default_home,
)
from svmcore.engine import interrupts
from svmcore.spec.errors import SvmcoreError

log = logging.getLogger(__name__)
# each subcommand's module: a command imports its own alone (all of them cost every call ~0.2 CPU-s)
COMMANDS = {"run": "run", "sweep": "sweep", "estimate": "predict", "recommend": "predict", "calibrate": "predict",
            "predict": "serve", "data": "data", "knobs": "knobs", "runs": "runs", "doctor": "doctor", "fit": "fit"}


def build_parser(argv: list[str] | None = None) -> _Parser:
    """The parser of the command ``argv`` names (every command's if it names none, or without ``argv``)."""
    p = _Parser(prog="svmcore", description="SVM Memory Lab: measured training runs.")
    p.add_argument("--home", default=None, help="data folder (default $SVMCORE_HOME or ./.svmcore)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    named = _command(argv or [])
    for module in dict.fromkeys([COMMANDS[named]] if named in COMMANDS else COMMANDS.values()):
        importlib.import_module(f"svmcore.cli.{module}").add_parser(sub)
    return p


def _command(argv: list[str]) -> str | None:
    """The first word of ``argv`` that is neither an option nor ``--home``'s value."""
    words = iter(argv)
    for word in words:
        if word == "--home":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    home = getattr(args, "home_sub", None) or args.home or default_home()
    _log_to_stderr()
    with interrupts.trapped():  # SIGINT and SIGTERM: end what the command started, one line, 128 + N
        try:
            return _dispatch(args, home)
        except interrupts.Interrupted as e:
            ended = interrupts.end_children()
            runs = ", ".join(("calibration " if r.label == "calibration" else "") + f"run {r.run_id} {r.status.value}"
                             for r in ended if r.run_id is not None)
            print(f"svmcore: {args.command} interrupted by {e.signal_name}"
                  + (f"; ended {runs}" if runs else ""), file=sys.stderr)
            return e.exit_code


def _dispatch(args, home: str) -> int:
    try:
        if getattr(args, "uses_home", True):
            # the data home must be a folder; commands that cache or calibrate must be able to write in it
            check_home(home, write=getattr(args, "writes_home", False))
        return args.handler(args, home)
    except SvmcoreError as e:  # a StoreError too
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
