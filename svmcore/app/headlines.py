"""One-line answers about runs, as people read them: how a run ended (the Train page's
toast), how runs compare against a baseline (the Compare page's headline), and a story for
a demo: a baseline and up to three remedies as slides (the question, the baseline's memory
curve, each remedy over it with its headline, the trade-off), the same on screen and in
the exported file.

Pure: plain values in, text out, so every wording is tested with ==.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field

from svmcore.app.noise import DEFAULT_NOISE, Noise, peak_within, within
from svmcore.spec.config import validate
from svmcore.spec.errors import ConfigError
from svmcore.spec.knobs import KNOBS
from svmcore.spec.result import RunPeak, RunSummary, mib_text

MINUS = "\u2212"  # a typographic minus: "-17%" reads as a hyphen


@dataclass(frozen=True)
class RunFacts:
    """One run as a headline reads it: its typed summary (every figure, read through the
    summary's own fields and ``run_peak``) and what names it beside the runs compared."""

    id: int
    status: str
    summary: RunSummary = field(default_factory=RunSummary)
    name: str = ""  # what tells it apart from the others compared, e.g. "stream"
    label: str = ""  # the name the user gave it, if any
    data: str = ""  # the data it used: 'sparse-text, 100,000 rows'

    @property
    def peak(self) -> RunPeak:
        return self.summary.run_peak

    @property
    def one_time(self) -> tuple[float | None, float | None]:
        """(the prepare phase's exact peak, the exact peak of the other phases) when the run's
        peak was its prepare phase building copies of the data that later runs reuse (the
        worker lists them as ``prepared_once``); (None, None) otherwise. Each phase's peak is
        the kernel's high-water mark reset at its start, so both are exact."""
        s = self.summary
        rest = [p.peak_rss_mb for p in s.phases if p.name != "prepare" and p.peak_rss_mb is not None]
        if not s.prepared_once or s.peak_phase != "prepare" or not rest:
            return None, None
        return s.phase_peak("prepare"), max(rest)

    @property
    def compared_peak_mb(self) -> float | None:
        """The peak to compare with other runs: the run's own, one-time preparation left out."""
        once, own = self.one_time
        return own if once is not None else self.peak.mb

    @property
    def title(self) -> str:
        return run_title(self.id, self.label, self.name)


def run_tag(label: str | None = "", name: str = "") -> str:
    """'big batch (batch size 8,192)': the name the user gave a run and what tells it
    apart from the runs beside it, each when there is one."""
    if label and name:
        return f"{label} ({name})"
    return label or name or ""


def run_title(run_id: int, label: str | None = "", name: str = "") -> str:
    """'run 7 · big batch (batch size 8,192)'."""
    tag = run_tag(label, name)
    return f"run {run_id}" + (f" · {tag}" if tag else "")


def signed(value: float, digits: int) -> str:
    text = f"{abs(value):.{digits}f}"
    if float(text) == 0:
        return "\u00b1" + text
    return ("+" if value > 0 else MINUS) + text


def ending(run: RunFacts, error: str | None = None) -> str:
    """How a run ended, without its name: 'completed: exact peak 252 MiB, owned by load'."""
    s, peak = run.summary, mib_text(run.peak.mb)
    where = f" in {s.phase}" if s.phase else ""
    if run.peak.parallel and run.status in ("completed", "oom", "cancelled"):
        text = {"completed": "completed", "oom": f"ran out of memory{where}",
                "cancelled": f"cancelled{where}"}[run.status]
        return f"{text}: {run.peak.parallel.text()}"
    once, own = run.one_time
    if run.status == "completed" and once is not None:
        return (f"completed: exact peak {mib_text(own)} without its one-time preparation "
                f"(which peaked at {mib_text(once)} building copies of the data that later runs reuse)")
    cap = f" under a {mib_text(s.cap_mb)} {s.cap} cap" if s.cap_mb else ""
    return {"completed": f"completed: exact peak {peak}" + (f", owned by {s.peak_phase}" if s.peak_phase else ""),
            "oom": f"ran out of memory{where}: exact peak {peak}{cap}",
            "cancelled": f"cancelled{where}: exact peak {peak} until then",
            "failed": f"failed{where}" + (f": {error}" if error else ""),
            "lost": "was lost: its runner stopped before it reported an outcome"}.get(run.status, f"is {run.status}")


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

    a, b = base.compared_peak_mb, other.compared_peak_mb
    sa, sb = base.summary, other.summary
    return {
        "peak_pct": None if not a or b is None else (b / a - 1) * 100,
        "speed_ratio": None if not sa.samples_per_s or sb.samples_per_s is None
        else sb.samples_per_s / sa.samples_per_s,
        "accuracy": diff(sa.accuracy, sb.accuracy),
        "balanced_accuracy": diff(sa.balanced_accuracy, sb.balanced_accuracy),
    }


def speed_text(ratio: float) -> str:
    """'2.8× slower', '1.5× faster', or 'same speed' where the ratio reads 1.0× (whether a
    ratio is beyond run-to-run noise is ``noise.within``'s to say)."""
    times = f"{max(ratio, 1 / ratio):.1f}" if ratio > 0 else "1.0"
    if times == "1.0":
        return "same speed"
    return f"{times}× faster" if ratio > 1 else f"{times}× slower"


NOISE_NOTE = " (within noise)"
NOISE_MARK = "\u2248"  # '≈−3% peak': the compact form, where a title says what it means


def noted(text: str, inside: bool, compact: bool = False) -> str:
    """A delta, marked when it is within run-to-run noise (a delta that reads as none, '±0%',
    needs no mark): ' (within noise)' after it, or ``compact``, '≈' before it."""
    if not inside or not any(c in "123456789" for c in text.split("(")[0]):
        return text
    return NOISE_MARK + text if compact else text + NOISE_NOTE


def comparison_headline(base: RunFacts, other: RunFacts, noise: Noise = DEFAULT_NOISE) -> str:
    """One line: 'run 2 · stream vs run 1 · memory: exact peak −17% (252 → 208 MiB),
    2.8× slower, accuracy ±0.000, balanced accuracy +0.012'. Only completed runs are
    compared number by number; a run that ended otherwise says how it ended. A delta within
    the run-to-run ``noise`` says so ('exact peak −3% (178 → 174 MiB) (within noise)')."""
    head = f"{other.title} vs {base.title}: "
    if other.status != "completed":
        return head + ending(other)
    d = deltas(base, other)
    quiet = within(d, noise)
    parts = []
    if d["peak_pct"] is not None:
        once = "".join(f"; run {r.id}'s one-time preparation ({r.one_time[0]:,.0f} MiB) left out"
                       for r in (base, other) if r.one_time[0] is not None)
        # a data-parallel run's peak is all its processes (sampled): its largest worker and coordinator said beside
        par = "".join(f"; run {r.id}'s: {r.peak.text()}" for r in (base, other) if r.peak.parallel is not None)
        exact = "exact " if base.peak.exact and other.peak.exact else ""
        parts.append(noted(f"{exact}peak {signed(d['peak_pct'], 0)}% ({base.compared_peak_mb:,.0f} → "
                           f"{other.compared_peak_mb:,.0f} MiB{once}{par})", quiet["peak_pct"]))
    if d["speed_ratio"] is not None:
        parts.append(noted(speed_text(d["speed_ratio"]), quiet["speed_ratio"]))
    for key, label in (("accuracy", "accuracy"), ("balanced_accuracy", "balanced accuracy")):
        if d[key] is not None:
            parts.append(noted(f"{label} {signed(d[key], 3)}", quiet[key]))
    return head + (", ".join(parts) or "nothing measured to compare")


def short_headline(base: RunFacts, other: RunFacts, noise: Noise = DEFAULT_NOISE, compact: bool = False) -> str:
    """'run 6 · stream: −71% peak, 1.4× slower (within noise), −0.1 pt accuracy (within
    noise)' (accuracy in percentage points; ``compact``: '≈1.4× slower' for a chart's
    title); a run that did not complete says how it ended."""
    if other.status != "completed":
        return f"{other.title}: {ending(other)}"
    d = deltas(base, other)
    quiet = within(d, noise)
    parts = []
    if d["peak_pct"] is not None:
        parts.append(noted(f"{signed(d['peak_pct'], 0)}% peak", quiet["peak_pct"], compact))
    if d["speed_ratio"] is not None:
        parts.append(noted(speed_text(d["speed_ratio"]), quiet["speed_ratio"], compact))
    if d["accuracy"] is not None:
        parts.append(noted(f"{signed(d['accuracy'] * 100, 1)} pt accuracy", quiet["accuracy"], compact))
    return f"{other.title}: " + (", ".join(parts) or "nothing measured to compare")


def comparison_headlines(base: RunFacts, others: list[RunFacts], noise: Noise = DEFAULT_NOISE) -> list[str]:
    """One line per compared run; a single line when the baseline has nothing to compare."""
    if base.status != "completed":
        return [f"The baseline, {base.title}, {ending(base)}. Choose a completed run as the baseline."]
    return [comparison_headline(base, o, noise) for o in others if o.id != base.id]


# Knobs whose values name themselves: 'stream', 'float32', 'dense', 'kernel-svm', a file's name.
SELF_NAMING = ("dataset", "mode", "representation", "precision", "model")


def knob_value_text(name: str, value) -> str:
    """A knob's value as a short name: 'stream', 'shuffle off', 'batch size 256',
    'memory cap 150 MB' (a knob named for its unit says the unit after the value)."""
    knob = KNOBS.get(name)
    label, unit = name.replace("_", " "), ""
    if knob is not None and knob.unit and label.endswith(" " + knob.unit.lower()):
        label, unit = label[:-len(knob.unit) - 1], " " + knob.unit
    if value is None:
        return f"{label} auto" if knob is not None and knob.auto else f"no {label}"
    if isinstance(value, bool):
        return f"{label} {'on' if value else 'off'}"
    if knob is not None and knob.choices and isinstance(value, str):
        if name in SELF_NAMING:
            return value.rsplit("/", 1)[-1]  # a dataset's file by its name only
        return f"{label} {value}"  # 'solver native', 'parser native': the value alone says too little
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int):
        return f"{label} {value:,}{unit}"
    return f"{label} {value}{unit}"


def change_text(after: dict, before: dict | None = None) -> str:
    """Knobs a change sets, as the run pickers name them: 'memmap, batch size 256'; given the setup
    ``before``, only the knobs it moves, each from its value there: 'batch size 1,024 → 256'."""
    if before is None:
        return ", ".join(knob_value_text(k, v) for k, v in after.items())
    words = []
    for k, v in after.items():
        if v != before.get(k):
            was, now = knob_value_text(k, before.get(k)).split(" "), knob_value_text(k, v).split(" ")
            same = len(os.path.commonprefix([was, now]))  # the knob's name, said once
            words.append(" ".join(was) + " → " + " ".join(now[same:] if same < len(now) else now))
    return ", ".join(words)


@functools.cache
def _default_config() -> dict:
    """Every knob at its default, as a run stores it (an auto value resolved)."""
    return validate({}).to_dict()


# What the run pickers say already, or what every run sets for itself: not news in a label.
UNCHANGED_IN_LABELS = ("dataset", "mode", "model", "seed")


def changed_knobs_text(config: dict, most: int = 3) -> str:
    """The knobs a run set away from their defaults, as the run pickers list it:
    'float32, batch size 8,192'. Two runs listed alike otherwise ('completed ·
    sparse-text · memory · linear-svm') differ here."""
    defaults = _default_config()
    generated = str(config.get("dataset")) in GENERATED
    changed = [knob_value_text(k, v) for k, v in config.items()
               if k in KNOBS and k not in UNCHANGED_IN_LABELS and v != defaults.get(k)
               and (generated or k not in GENERATOR_KNOBS)]
    return ", ".join(changed[:most] + ([f"+{len(changed) - most} more"] if len(changed) > most else []))


def names_against(run_ids: list[int], differing: dict[str, list], baseline: int, most: int = 3) -> dict[int, str]:
    """What each run changed against the baseline: the values of the knobs in which it
    differs from the baseline (in the registry's order), at most ``most`` of them and
    "+N more"; the baseline itself is "baseline", and a run with all of its knobs
    "same knobs". ``differing``: each knob that differs among the runs, its values in
    ``run_ids``' order. A ``None`` of a knob the run's dataset does not read (``rows``
    of a file) names nothing."""
    if baseline not in run_ids or len(run_ids) < 2:  # one run alone is compared with nothing: no name
        return {rid: "" for rid in run_ids}
    b = run_ids.index(baseline)
    order = list(KNOBS)
    names = {}
    for i, rid in enumerate(run_ids):
        changed = [k for k in sorted(differing, key=lambda k: order.index(k) if k in order else len(order))
                   if json.dumps(differing[k][i]) != json.dumps(differing[k][b])]
        texts = [t for t in ("" if differing[k][i] is None and k in GENERATOR_KNOBS
                             else knob_value_text(k, differing[k][i]) for k in changed) if t]
        names[rid] = ("baseline" if rid == baseline else "same knobs" if not changed else
                      ", ".join(texts[:most] + ([f"+{len(texts) - most} more"] if len(texts) > most else [])))
    return names


def pick_baseline(configs: dict[int, dict]) -> tuple[int, str]:
    """The run a person would compare the others against, and why: the one the others
    differ from least (a default run among one-knob changes of it), then the one with the
    fewest knobs away from the defaults, then the earliest."""
    if not configs:
        raise ValueError("no runs to pick a baseline from")
    defaults = _default_config()

    read = {i: {k: read_knob(c, k) for k in KNOBS} for i, c in configs.items()}

    def apart(a: dict, b: dict) -> int:
        return sum(json.dumps(a[k]) != json.dumps(b[k]) for k in KNOBS)

    def away(c: dict) -> int:  # the seed is no setting: a repeat over seeds is still at the defaults
        return sum(json.dumps(c[k]) != json.dumps(defaults.get(k)) for k in KNOBS if k != "seed")

    total = {i: sum(apart(c, o) for j, o in read.items() if j != i) for i, c in read.items()}
    best = min(configs, key=lambda i: (total[i], away(read[i]), i))
    if sum(total[i] == total[best] for i in configs) == 1:
        return best, "the run the others differ from least"
    if away(read[best]) == 0:
        return best, "the run at the default knobs"
    return best, "the earliest of them" if best == min(configs) else "the one nearest the default knobs"


GENERATOR_KNOBS = ("rows", "features", "nnz_per_row")  # only the generated datasets read them
GENERATED = ("sparse-text", "dense")


def read_knob(config: dict, name: str):
    """A knob's value as the run read it: None for a generator knob (``rows``) of a run on
    a file, which does not read it."""
    if name in GENERATOR_KNOBS and str(config.get("dataset")) not in GENERATED:
        return None
    return config.get(name)


def data_text(dataset, summary: RunSummary, rows_knob=None) -> str:
    """The data a run used, as measured: 'a9a.svm, 300 rows' (rows trained on and held
    out, when it reported them; else the ``rows`` knob of a generated dataset)."""
    name = str(dataset).rsplit("/", 1)[-1]
    rows = (summary.train_rows or 0) + (summary.test_rows or 0) if summary.train_rows is not None else None
    if rows is None and name in GENERATED and rows_knob:
        rows = rows_knob
    return name + (f", {rows:,} rows" if rows else "")


def data_warning(runs: list[RunFacts]) -> str | None:
    """A warning when the runs compared did not use the same data."""
    used = {r.data for r in runs if r.data}
    if len(used) < 2:
        return None
    return ("These runs used different data, so their numbers are not like for like: "
            + "; ".join(f"run {r.id}: {r.data}" for r in runs if r.data) + ".")


@dataclass(frozen=True)
class Comparison:
    """Runs compared against a baseline: their facts (in the order asked), the
    baseline's id, each other run's deltas and the headline, one line per run."""

    runs: tuple[RunFacts, ...]
    baseline: int
    deltas: dict[int, dict]
    headlines: tuple[str, ...]
    warning: str | None = None  # e.g. the runs used different data
    noise: Noise = DEFAULT_NOISE  # what a delta must exceed to be more than run-to-run noise


def compare(runs: list[RunFacts], baseline: int | None = None, noise: Noise = DEFAULT_NOISE) -> Comparison:
    """Compare ``runs`` against the one with id ``baseline`` (default: the first)."""
    if not runs:
        return Comparison((), baseline or 0, {}, (), noise=noise)
    base = next((r for r in runs if r.id == baseline), runs[0])
    others = [r for r in runs if r.id != base.id]
    return Comparison(tuple(runs), base.id, {r.id: deltas(base, r) for r in others},
                      tuple(comparison_headlines(base, others, noise)), data_warning(runs), noise)


def pick_label(row: dict, changed: str | None = None) -> str:
    """A run as a picker of a few runs lists it, short enough for a 1024 px window: 'run 22 ·
    big batch · stream · batch size 8,192' (its name, what it set away from the defaults, or
    ``changed``: what it changed against a baseline, and how it ended when it did not complete)."""
    defaults = _default_config()
    own = [] if changed is not None else [row.get(k) for k in ("dataset", "mode", "model")
                                          if row.get(k) and row.get(k) != defaults.get(k)]
    parts = [f"run {row['id']}", row.get("name"), *own, row.get("changed") if changed is None else changed,
             row["status"] if row.get("status") != "completed" else ""]
    return " · ".join(str(p) for p in parts if p)


def run_label(row: dict) -> str:
    """A run as the run pickers list it, its status current: 'run 17 · big batch ·
    completed · sparse-text · memory · linear-svm · float32' (its name, the knobs it
    changed and its label, if it has them)."""
    parts = [f"run {row['id']}", row.get("name"), row["status"], "damaged" if row.get("damage") else None,
             row.get("dataset"), row.get("mode"), row.get("model"), row.get("changed"), row.get("label")]
    return " · ".join(str(p) for p in parts if p)


# ---------------------------------------------------------------- a story

MOST_REMEDIES = 3
KEEP_ACCURACY_PTS = 1.0  # a remedy that loses more accuracy than this is a trade, not a plain win


@dataclass(frozen=True)
class Slide:
    """One step of a story: what it shows (``kind``), its title and headline, and the
    runs drawn on it (the baseline first)."""

    kind: str  # question | baseline | remedy | tradeoff | advice
    title: str
    headline: str
    runs: tuple[int, ...]


def check_story(baseline: int | None, remedies: list[int]) -> None:
    """Refuse a story that cannot be told: no baseline, no remedy, too many remedies,
    or the baseline among its own remedies."""
    if baseline is None:
        raise ConfigError("story", "choose a baseline run")
    if not remedies:
        raise ConfigError("story", "choose at least one remedy run to compare with the baseline")
    if len(remedies) > MOST_REMEDIES:
        raise ConfigError("story", f"choose at most {MOST_REMEDIES} remedy runs ({len(remedies)} chosen)")
    if baseline in remedies:
        raise ConfigError("story", f"run {baseline} is the baseline; it cannot also be a remedy")


def default_question(base: RunFacts) -> str:
    """'Run 1 · memory peaks at 253 MiB: what lowers it, and what does it cost?'"""
    title = base.title[0].upper() + base.title[1:]
    return f"{title} peaks at {mib_text(base.peak.mb)}: what lowers it, and what does it cost?"


def _lowest(base: RunFacts, remedies: list[RunFacts]) -> str:
    done = [r for r in remedies if r.status == "completed" and r.peak.mb is not None]
    if not done:
        return "No remedy completed: nothing to weigh against the baseline."
    best = min(done, key=lambda r: r.peak.mb)
    d = deltas(base, best)
    acc = "" if best.summary.accuracy is None else f", accuracy {best.summary.accuracy:.3f}"
    pct = "" if d["peak_pct"] is None else f" ({signed(d['peak_pct'], 0)}%)"
    exact = "exact " if all(r.peak.exact for r in [base, *remedies]) else ""  # a data-parallel run's is sampled
    return f"Lowest {exact}peak: {best.title}, {mib_text(best.peak.mb)}{pct}{acc}."


def advice(base: RunFacts, remedies: list[RunFacts], noise: Noise = DEFAULT_NOISE) -> str:
    """What to do, with its figures: the remedy that lowers the exact peak most beyond
    run-to-run noise while keeping accuracy within ``KEEP_ACCURACY_PTS``; else the one that
    lowers it most, its accuracy cost said; else keep the baseline's setting."""
    lower = []
    for r in remedies:
        d = deltas(base, r)
        if d["peak_pct"] is not None and d["peak_pct"] < 0 and not peak_within(d["peak_pct"], noise):
            lower.append((r, d))
    if not lower:
        return (f"Keep the baseline, {base.title}: no remedy lowered its exact peak ({mib_text(base.peak.mb)}) by more "
                f"than the run-to-run noise ({noise.peak_pct:.0f}%).")
    kept = [(r, d) for r, d in lower if d["accuracy"] is None or d["accuracy"] * 100 >= -KEEP_ACCURACY_PTS]
    best, d = min(kept or lower, key=lambda rd: rd[1]["peak_pct"])
    quiet = within(d, noise)
    figures = [f"exact peak {mib_text(base.compared_peak_mb)} → {mib_text(best.compared_peak_mb)} "
               f"({signed(d['peak_pct'], 0)}%)"]
    if d["speed_ratio"] is not None:
        figures.append(noted(speed_text(d["speed_ratio"]), quiet["speed_ratio"]))
    if d["accuracy"] is not None:
        figures.append(noted(f"accuracy {signed(d['accuracy'] * 100, 1)} pt", quiet["accuracy"]))
    why = (f"it lowers the peak most of the remedies that keep accuracy within {KEEP_ACCURACY_PTS:.0f} point"
           if kept else f"it lowers the peak most, but every remedy that lowers it costs more than "
                        f"{KEEP_ACCURACY_PTS:.0f} point of accuracy")
    return f"Use {best.title}: {', '.join(figures)}; {why}."


def story_slides(cmp: Comparison, question: str | None = None) -> tuple[Slide, ...]:
    """The slides of the story of ``cmp`` (its baseline and the other runs as remedies,
    in the order chosen). Raises ConfigError when the story cannot be told."""
    base = next((r for r in cmp.runs if r.id == cmp.baseline), None)
    remedies = [r for r in cmp.runs if r.id != cmp.baseline]
    check_story(None if base is None else base.id, [r.id for r in remedies])
    if base.status != "completed":
        raise ConfigError("story", f"the baseline, {base.title}, {ending(base)}; choose a completed run")
    names = ", ".join(r.title for r in remedies)
    slides = [Slide("question", (question or "").strip() or default_question(base),
                    f"Baseline {base.title}; remedies: {names}. Exact peaks are the kernel's high-water mark"
                    + ("; a data-parallel run's peak is all its processes, sampled." if any(
                        not r.peak.exact for r in cmp.runs) else "."),
                    (base.id,)),
              Slide("baseline", f"The baseline: {base.title}", f"{base.title}: {ending(base)}", (base.id,))]
    slides += [Slide("remedy", f"Remedy: {r.title}", short_headline(base, r, cmp.noise), (base.id, r.id))
               for r in remedies]
    slides.append(Slide("tradeoff", "The trade-off: exact peak against accuracy", _lowest(base, remedies),
                        tuple(r.id for r in cmp.runs)))
    slides.append(Slide("advice", "What to do", advice(base, remedies, cmp.noise), tuple(r.id for r in cmp.runs)))
    return tuple(slides)
