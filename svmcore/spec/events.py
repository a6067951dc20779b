"""The worker's events: one JSON object per line of RUN_DIR/events.jsonl, each with
``kind`` and ``ts`` (the worker's wall clock). Written by the worker, read by the engine
(through :func:`parse`, the one reader of the wire format) and the charts.

Each kind's fields are a ``TypedDict`` below. They are plain dicts at run time, so the
store, the charts and the exported story keep reading them as before; the types say
which fields a reader may rely on. In the engine an event has ``t_s`` (seconds after the
run's start) in place of ``ts``, and ``seq`` (its place in the run's events).
"""

# no ``from __future__ import annotations``: TypedDict must see NotRequired to leave it out
# of the required keys
import logging
import typing
from typing import Any, NotRequired, TypedDict

from svmcore.spec.json_values import JSONValueError, fits, loads

log = logging.getLogger(__name__)

STARTED = "started"
PHASE_START = "phase_start"
PHASE_END = "phase_end"
DATA = "data"
LOADED = "loaded"
TRANSFORMED = "transformed"
PROGRESS = "progress"
EVAL = "eval"
WORKER_MEMORY = "worker_memory"
OUTCOME = "outcome"
PASS_END = "pass_end"

PHASES = ("imports", "prepare", "load", "transform", "train", "distill", "evaluate")


class Event(TypedDict):
    """What every event has, as the engine holds it."""

    kind: str
    t_s: float
    seq: NotRequired[int]  # set by the reader that numbers a run's events


class Started(Event):
    pid: int
    cap_kind: str | None
    cap_bytes: int | None


class PhaseStart(Event):
    phase: str
    rss_bytes: int


class PhaseEnd(Event):
    phase: str
    wall_s: float
    peak_rss_bytes: int  # the kernel's high-water mark of the phase (VmHWM, reset at its start): exact
    rss_bytes: NotRequired[int]
    cpu_s: NotRequired[float]  # the worker's CPU time in the phase, every thread (user + system)


class Data(Event):
    info: dict  # the scan of the data (spec.result.DataInfo.to_dict())
    n_features: int
    text_path: str | None
    binary_path: str | None
    prepared_once: NotRequired[list[str]]  # copies of the data the prepare phase built, later runs reuse


class Loaded(Event):
    train_rows: int
    test_rows: int
    train_data_bytes: int
    test_data_bytes: int


class Transformed(Event):
    components: int


class Progress(Event):
    samples: int
    batches: int
    epoch: int
    epochs: int
    total: int
    train_elapsed_s: float
    epoch_samples_per_s: NotRequired[float]  # at the end of an epoch


class Eval(Event):
    samples: int
    accuracy: float
    balanced_accuracy: float
    rows: int
    train_elapsed_s: float
    final: NotRequired[bool]  # the evaluation on every test row after training


class WorkerMemory(Event):
    """One Dask worker's epoch (or mix) of a data-parallel run (workers > 1)."""

    worker: int  # 1-based
    address: str
    pid: int
    epoch: int
    mix: int
    start_ts: float
    started_ago_s: float  # the task began that long before this event
    dt: list[float]  # seconds after the task began, one per reading
    rss_bytes: list[int]  # sampled at 50 Hz, the same length as dt
    hwm_bytes: int
    rows: int
    seconds: float


class PassEnd(Event):
    """The memory the worker retained at the end of a training pass: VmRSS and RssAnon of
    /proc/self/status read at that moment (exact readings, not a peak); a data-parallel run's
    Dask workers' at the end of their shard's pass, one each."""

    epoch: int  # the pass, 1-based
    rss_bytes: int
    anon_bytes: int
    workers_rss_bytes: NotRequired[list[int]]
    workers_anon_bytes: NotRequired[list[int]]


class Outcome(Event):
    status: str
    phase: str | None
    error: dict | None
    summary: dict
    peak_rss_bytes: int


RECORDS: dict[str, type[Event]] = {STARTED: Started, PHASE_START: PhaseStart, PHASE_END: PhaseEnd, DATA: Data,
                                   LOADED: Loaded, TRANSFORMED: Transformed, PROGRESS: Progress, EVAL: Eval,
                                   WORKER_MEMORY: WorkerMemory, OUTCOME: Outcome, PASS_END: PassEnd}
_BASE = frozenset(Event.__required_keys__)
REQUIRED = {kind: frozenset(rec.__required_keys__) - _BASE for kind, rec in RECORDS.items()}
_HINTS = {kind: typing.get_type_hints(rec) for kind, rec in RECORDS.items()}


def event_problem(ev: Any) -> str | None:
    """What makes ``ev`` no event a reader can use (not an object with a text ``kind``; a
    known kind without a field its record requires, or with a field of another type), or
    None. A kind not listed here passes (a newer worker may write kinds this reader does
    not use)."""
    if not isinstance(ev, dict) or not isinstance(ev.get("kind"), str):
        return "not an event object with a kind"
    missing = REQUIRED.get(ev["kind"], frozenset()) - ev.keys()
    if missing:
        return f"a {ev['kind']} event without {', '.join(sorted(missing))}"
    hints = _HINTS.get(ev["kind"], {})
    wrong = sorted(k for k, hint in hints.items() if k in ev and k not in ("kind", "t_s", "seq")
                   and not fits(ev[k], hint))
    if wrong:
        return f"a {ev['kind']} event whose {', '.join(wrong)} {'is' if len(wrong) == 1 else 'are'} of the wrong type"
    return None


class EventError(ValueError):
    """A line of the event file that is not an event this reader can use."""


def parse(line: bytes | str, t0: float, fallback_ts: float) -> Event:
    """One line of the event file as the engine holds it: ``ts`` becomes ``t_s`` (seconds
    after ``t0``; an event without ``ts`` gets ``fallback_ts``). Raises ``EventError`` for a
    line that is not JSON, not an object with a text ``kind``, or a known kind without a
    field its record requires. A kind not listed here is passed on as it is (a newer worker
    may write kinds this reader does not use)."""
    try:
        ev = loads(line, object)
    except JSONValueError as e:
        raise EventError(f"{e}: {_cut(line)}") from None
    problem = event_problem(ev)
    if problem:
        raise EventError(f"{problem}: {_cut(line)}")
    ts = ev.pop("ts", fallback_ts)
    ev["t_s"] = (ts if isinstance(ts, (int, float)) else fallback_ts) - t0
    return ev  # type: ignore[return-value]


def parse_lines(lines, t0: float, fallback_ts: float, source: str) -> list[Event]:
    """The events of ``lines``, skipping (and logging) each line :func:`parse` refuses: a
    worker killed mid-write loses that line, not the run."""
    out: list[Event] = []
    for line in lines:
        if not line.strip():
            continue
        try:
            out.append(parse(line, t0, fallback_ts))
        except EventError as e:
            log.warning("%s: skipped an event line: %s", source, e)
    return out


def _cut(line: bytes | str, n: int = 200) -> str:
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    return text[:n] + ("…" if len(text) > n else "")


def last(events: list[dict], kind: str, **match: Any) -> dict | None:
    """The latest event of ``kind`` (whose fields equal ``match``), or None."""
    return next((e for e in reversed(events) if e["kind"] == kind
                 and all(e.get(k) == v for k, v in match.items())), None)
