"""What every subcommand shares: exit codes, the data home, knob flags from the registry."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS
from svmcore.spec.status import RunStatus

EXIT = {RunStatus.COMPLETED: 0, RunStatus.FAILED: 1, RunStatus.OOM: 3, RunStatus.CANCELLED: 4,
        RunStatus.LOST: 1}


EXIT_BAD_INPUT = 2


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


def add_knob_flags(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    for k in KNOBS.values():
        if k.name in skip:
            continue
        default = "auto" if k.auto and k.default is None else k.default
        help_text = f"{k.help} [{k.describe_allowed()}; default {default}]"
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


def knob_values(args: argparse.Namespace, skip: tuple[str, ...] = ()) -> dict:
    """The knobs given as flags (``skip``: flags a subcommand uses for something else)."""
    return {k: getattr(args, k) for k in KNOBS if hasattr(args, k) and k not in skip}


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
    if os.path.isdir(home):
        from svmcore.store.sqlite import check_home_entries  # (here: ``knobs`` loads no store)

        check_home_entries(os.path.abspath(home))
