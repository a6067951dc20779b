"""The class exercise for a room of learners: one round of guesses, collected from every
browser, hidden answers until the teacher reveals them, and the tally of the class's
guesses beside the measurement and the memory model's forecast.

The round is kept in ``$SVMCORE_HOME/exercise/class.json`` (written whole and renamed,
so a crash never leaves half of it), so every session of the server, and a restart,
see the same round. The tally and the verdicts are pure (tested with ==).
"""

from __future__ import annotations

import json
import logging
import math
import os
import statistics
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field

from svmcore.app.headlines import MINUS
from svmcore.spec.errors import ConfigError

log = logging.getLogger(__name__)
BIN_PTS = 10  # the tally's bins: ten points of the exact peak's change each
MOST_GUESSES = 500  # a round is a class, not a survey: more is a stuck key or a script
NAME_CHARS = 40
CLOSE_PTS = 5.0  # a guess within 5 percentage points of the measurement is well judged


def pct_text(pct: float | None) -> str:
    """'−30%', '+4%', '±0%' (whole percent), '–' when unknown."""
    if pct is None:
        return "–"
    text = f"{abs(pct):.0f}"
    if text == "0":
        return "\u00b10%"
    return ("+" if pct > 0 else MINUS) + text + "%"


@dataclass(frozen=True)
class Guess:
    """One learner's guess: the remedy (``Choice.key``), the change of the exact peak in
    percent, and a name if they gave one."""

    choice: str
    pct: float
    who: str = ""
    at: float = 0.0


@dataclass(frozen=True)
class Round:
    """The class's round: teacher mode on or off, answers revealed or hidden, the guesses
    so far, and the runs prepared ahead (``prepared``: before/after run ids per choice)."""

    teacher: bool = False
    revealed: bool = False
    guesses: tuple[Guess, ...] = ()
    prepared: dict = field(default_factory=dict)
    quick: bool = False

    def guesses_for(self, choice: str) -> list[Guess]:
        return [g for g in self.guesses if g.choice == choice]


def answers_hidden(teacher: bool, revealed: bool) -> bool:
    """Whether the measured answers (the reveal, Learn's table of what each remedy saves, the
    loop that names which phase a remedy cannot lower) are hidden: in teacher mode, until the
    teacher reveals them, which takes at least one guess; alone, a learner sees the page whole."""
    return teacher and not revealed


@dataclass(frozen=True)
class Bin:
    """One bar of the tally: guesses from ``lo`` (included) to ``hi`` percent."""

    lo: float
    hi: float
    count: int


def tally(pcts: list[float], width: float = BIN_PTS) -> tuple[Bin, ...]:
    """The guesses in bins of ``width`` points, from the lowest guess's bin to the highest's
    (empty bins between them kept, so that the spread reads as it is)."""
    if not pcts:
        return ()
    lo, hi = math.floor(min(pcts) / width), math.floor(max(pcts) / width)
    counts = {k: 0 for k in range(lo, hi + 1)}
    for p in pcts:
        counts[math.floor(p / width)] += 1
    return tuple(Bin(k * width, (k + 1) * width, n) for k, n in counts.items())


def class_verdict(pcts: list[float], measured_pct: float | None) -> str | None:
    """How the class guessed, against the measurement: 'The class's median guess was −30%
    (12 guesses, −60% to +0%); the exact peak changed +1%: 0 of 12 within 5 points.'"""
    if not pcts or measured_pct is None:
        return None
    median = statistics.median(pcts)
    close = sum(abs(p - measured_pct) <= CLOSE_PTS for p in pcts)
    spread = f", {pct_text(min(pcts))} to {pct_text(max(pcts))}" if len(pcts) > 1 else ""
    return (f"The class's median guess was {pct_text(median)} ({len(pcts)} guess{'es' if len(pcts) != 1 else ''}"
            f"{spread}); the exact peak changed {pct_text(measured_pct)}: {close} of {len(pcts)} within "
            f"{CLOSE_PTS:.0f} points.")


def prepare_slots(peaks_mb: list[float], available_mb: float, cpus: int, share: float = 0.7) -> int:
    """How many runs to measure at once: as many as the cores allow whose forecast peaks
    fit in ``share`` of the memory available now (the highest peak for each), at least one."""
    if not peaks_mb:
        return 1
    return max(1, min(cpus, int(available_mb * share // max(peaks_mb))))


class Classroom:
    """The round of this data home, shared by every session (thread-safe)."""

    def __init__(self, home: str):
        self.path = os.path.join(home, "exercise", "class.json")
        self._lock = threading.Lock()

    def state(self) -> Round:
        with self._lock:
            return self._read()

    def _read(self) -> Round:
        try:
            with open(self.path) as f:
                raw = json.load(f)
            return Round(bool(raw.get("teacher")), bool(raw.get("revealed")),
                         tuple(Guess(**g) for g in raw.get("guesses", [])), dict(raw.get("prepared") or {}),
                         bool(raw.get("quick")))
        except FileNotFoundError:
            return Round()
        except (OSError, ValueError, TypeError) as e:  # a damaged file: a new round, said in the log
            log.warning("the class round in %s could not be read (%s): a new round starts", self.path, e)
            return Round()

    def _write(self, r: Round) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), prefix=".class-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(asdict(r), f)
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise

    def _update(self, **changes) -> Round:
        with self._lock:
            r = Round(**{**self._read().__dict__, **changes})
            self._write(r)
            return r

    def set_teacher(self, on: bool) -> Round:
        return self._update(teacher=bool(on), revealed=False)

    def reveal(self, on: bool = True) -> Round:
        """Show the answers to every browser (``on``), or hide them again. Raises ConfigError
        before any guess is in: the answers wait for the class's guesses."""
        if on and not self.state().guesses:
            raise ConfigError("reveal", "no guess is in yet: the answers wait for the class's guesses")
        return self._update(revealed=bool(on))

    def new_round(self) -> Round:
        """No guesses, answers hidden again (the prepared runs stay: they are measurements)."""
        return self._update(guesses=(), revealed=False)

    def set_prepared(self, prepared: dict, quick: bool) -> Round:
        return self._update(prepared=prepared, quick=bool(quick))

    def submit(self, choice: str, pct: float | None, who: str = "") -> Round:
        """Add one guess to the round. Raises ConfigError for a guess that is no guess."""
        if pct is None:
            raise ConfigError("guess", "type your guess first: the change of the exact peak, in percent")
        if not -100 < pct < 1000:
            raise ConfigError("guess", f"a change of the peak between -100% and +1000% ({pct:g}% given)")
        who = " ".join((who or "").split())[:NAME_CHARS]
        if any(not c.isprintable() for c in who):
            raise ConfigError("name", "a name of printable characters")
        with self._lock:
            r = self._read()
            if len(r.guesses) >= MOST_GUESSES:
                raise ConfigError("guess", f"this round has {MOST_GUESSES} guesses already; start a new round")
            r = Round(**{**r.__dict__, "guesses": r.guesses + (Guess(choice, float(pct), who, time.time()),)})
            self._write(r)
            return r
