"""One-line answers about runs, as people read them: how a run ended (the Train page's
toast) and how runs compare against a baseline (the Compare page's headline).

Pure: plain values in, text out, so every wording is tested with ==.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.spec.knobs import KNOBS
from svmcore.store.records import RunSummary

MINUS = "\u2212"  # a typographic minus: "-17%" reads as a hyphen
SAME_SPEED = 0.05  # throughput within 5% either way reads "same speed"


@dataclass(frozen=True)
class RunFacts:
    """What a headline needs to know of one run (all measured; None where not)."""

    id: int
    status: str
    name: str = ""  # what tells it apart from the others compared, e.g. "stream"
    peak_mb: float | None = None  # exact: the kernel's high-water mark
    peak_phase: str | None = None
    phase: str | None = None  # where a run that did not complete ended
    cap: str | None = None
    cap_mb: float | None = None
    accuracy: float | None = None
    balanced_accuracy: float | None = None
    samples_per_s: float | None = None

    @classmethod
    def of(cls, run_id: int, status: str, summary: RunSummary, name: str = "") -> RunFacts:
        s = summary
        return cls(run_id, status, name, s.peak_rss_mb, s.peak_phase, s.phase, s.cap, s.cap_mb, s.accuracy,
                   s.balanced_accuracy, s.samples_per_s)

    @property
    def title(self) -> str:
        return f"run {self.id}" + (f" · {self.name}" if self.name else "")


def _signed(value: float, digits: int) -> str:
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return "\u00b1" + text
    return ("+" if value > 0 else MINUS) + text


def _mib(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} MiB"


def ending(run: RunFacts, error: str | None = None) -> str:
    """How a run ended, without its name: 'completed: exact peak 252 MiB, owned by load'."""
    where = f" in {run.phase}" if run.phase else ""
    if run.status == "completed":
        owner = f", owned by {run.peak_phase}" if run.peak_phase else ""
        return f"completed: exact peak {_mib(run.peak_mb)}{owner}"
    if run.status == "oom":
        cap = f" under a {_mib(run.cap_mb)} {run.cap} cap" if run.cap_mb else ""
        return f"ran out of memory{where}: exact peak {_mib(run.peak_mb)}{cap}"
    if run.status == "cancelled":
        return f"cancelled{where}: exact peak {_mib(run.peak_mb)} until then"
    if run.status == "failed":
        return f"failed{where}" + (f": {error}" if error else "")
    if run.status == "lost":
        return "was lost: its runner stopped before it reported an outcome"
    return f"is {run.status}"


def outcome_headline(run: RunFacts, error: str | None = None) -> str:
    """How a run ended, in one line: 'Run 17 completed: exact peak 252 MiB, owned by load'."""
    return f"Run {run.id} {ending(run, error)}"


def deltas(base: RunFacts, other: RunFacts) -> dict:
    """How ``other`` differs from ``base``: the exact peak in percent, throughput as a
    ratio (other / base), accuracy and balanced accuracy as differences; None where
    either side lacks the number, and all None unless both completed (the peak of a
    run stopped by its cap or a cancel measures the stop, not the setting)."""
    def diff(a, b):
        return None if a is None or b is None else b - a

    if base.status != "completed" or other.status != "completed":
        return {"peak_pct": None, "speed_ratio": None, "accuracy": None, "balanced_accuracy": None}

    return {
        "peak_pct": (None if not base.peak_mb or other.peak_mb is None
                     else (other.peak_mb / base.peak_mb - 1) * 100),
        "speed_ratio": (None if not base.samples_per_s or other.samples_per_s is None
                        else other.samples_per_s / base.samples_per_s),
        "accuracy": diff(base.accuracy, other.accuracy),
        "balanced_accuracy": diff(base.balanced_accuracy, other.balanced_accuracy),
    }


def speed_text(ratio: float) -> str:
    """'2.8× slower', '1.5× faster' or 'same speed' (within 5%)."""
    if abs(ratio - 1) <= SAME_SPEED or ratio <= 0:
        return "same speed"
    return f"{ratio:.1f}× faster" if ratio > 1 else f"{1 / ratio:.1f}× slower"


def comparison_headline(base: RunFacts, other: RunFacts) -> str:
    """One line: 'run 2 · stream vs run 1 · memory: exact peak −17% (252 → 208 MiB),
    2.8× slower, accuracy ±0.000, balanced accuracy +0.012'. Only completed runs are
    compared number by number; a run that ended otherwise says how it ended."""
    head = f"{other.title} vs {base.title}: "
    if other.status != "completed":
        return head + ending(other)
    d = deltas(base, other)
    parts = []
    if d["peak_pct"] is not None:
        parts.append(f"exact peak {_signed(d['peak_pct'], 0)}% ({base.peak_mb:,.0f} → {other.peak_mb:,.0f} MiB)")
    if d["speed_ratio"] is not None:
        parts.append(speed_text(d["speed_ratio"]))
    for key, label in (("accuracy", "accuracy"), ("balanced_accuracy", "balanced accuracy")):
        if d[key] is not None:
            parts.append(f"{label} {_signed(d[key], 3)}")
    return head + (", ".join(parts) or "nothing measured to compare")


def comparison_headlines(base: RunFacts, others: list[RunFacts]) -> list[str]:
    """One line per compared run; a single line when the baseline has nothing to compare."""
    if base.status != "completed":
        return [f"The baseline, {base.title}, {ending(base)}. Choose a completed run as the baseline."]
    return [comparison_headline(base, o) for o in others if o.id != base.id]


def knob_value_text(name: str, value) -> str:
    """A knob's value as a short name: 'stream', 'shuffle off', 'batch size 256'."""
    knob = KNOBS.get(name)
    label = name.replace("_", " ")
    if value is None:
        return f"{label} auto" if knob is not None and knob.auto else f"no {label}"
    if isinstance(value, bool):
        return f"{label} {'on' if value else 'off'}"
    if knob is not None and knob.choices and isinstance(value, str):
        return value.rsplit("/", 1)[-1]
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return f"{label} {value:,}"
    return f"{label} {value}"


def run_names(run_ids: list[int], differing: dict[str, list], most: int = 2) -> dict[int, str]:
    """What tells each run apart: the values of (at most ``most``) knobs that differ."""
    names = {}
    for i, rid in enumerate(run_ids):
        parts = [knob_value_text(k, vals[i]) for k, vals in list(differing.items())[:most]]
        if len(differing) > most:
            parts.append(f"+{len(differing) - most} more")
        names[rid] = ", ".join(parts)
    return names


@dataclass(frozen=True)
class Comparison:
    """Runs compared against a baseline: their facts (in the order asked), the
    baseline's id, each other run's deltas and the headline, one line per run."""

    runs: tuple[RunFacts, ...]
    baseline: int
    deltas: dict[int, dict]
    headlines: tuple[str, ...]


def compare(runs: list[RunFacts], baseline: int | None = None) -> Comparison:
    """Compare ``runs`` against the one with id ``baseline`` (default: the first)."""
    if not runs:
        return Comparison((), baseline or 0, {}, ())
    base = next((r for r in runs if r.id == baseline), runs[0])
    others = [r for r in runs if r.id != base.id]
    return Comparison(tuple(runs), base.id, {r.id: deltas(base, r) for r in others},
                      tuple(comparison_headlines(base, others)))


def run_label(row: dict) -> str:
    """A run as the run pickers list it, its status current: 'run 17 · completed ·
    sparse-text · memory · linear-svm' (and its label, if it has one)."""
    parts = [f"run {row['id']}", row["status"], row.get("dataset"), row.get("mode"), row.get("model"),
             row.get("label")]
    return " · ".join(str(p) for p in parts if p)
