"""A story for a demo: a baseline and up to three remedies as a sequence of slides
(the question, the baseline's memory curve, each remedy over it with its headline,
the trade-off), the same on screen and in the exported file.

Pure: facts in, slides out, so every wording is tested with ==.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.app.headlines import (Comparison, RunFacts, _mib, _signed, deltas, ending, noted, short_headline,
                                   speed_text)
from svmcore.app.noise import DEFAULT_NOISE, Noise, peak_within, within
from svmcore.spec.errors import ConfigError

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
    return f"{base.title[0].upper()}{base.title[1:]} peaks at {_mib(base.peak.mb)}: what lowers it, and what does it cost?"


def _lowest(base: RunFacts, remedies: list[RunFacts]) -> str:
    done = [r for r in remedies if r.status == "completed" and r.peak.mb is not None]
    if not done:
        return "No remedy completed: nothing to weigh against the baseline."
    best = min(done, key=lambda r: r.peak.mb)
    d = deltas(base, best)
    acc = "" if best.summary.accuracy is None else f", accuracy {best.summary.accuracy:.3f}"
    pct = "" if d["peak_pct"] is None else f" ({_signed(d['peak_pct'], 0)}%)"
    exact = "exact " if all(r.peak.exact for r in [base, *remedies]) else ""  # a data-parallel run's is sampled
    return f"Lowest {exact}peak: {best.title}, {_mib(best.peak.mb)}{pct}{acc}."


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
        return (f"Keep the baseline, {base.title}: no remedy lowered its exact peak ({_mib(base.peak.mb)}) by more "
                f"than the run-to-run noise ({noise.peak_pct:.0f}%).")
    kept = [(r, d) for r, d in lower if d["accuracy"] is None or d["accuracy"] * 100 >= -KEEP_ACCURACY_PTS]
    best, d = min(kept or lower, key=lambda rd: rd[1]["peak_pct"])
    quiet = within(d, noise)
    figures = [f"exact peak {_mib(base.compared_peak_mb)} → {_mib(best.compared_peak_mb)} "
               f"({_signed(d['peak_pct'], 0)}%)"]
    if d["speed_ratio"] is not None:
        figures.append(noted(speed_text(d["speed_ratio"]), quiet["speed_ratio"]))
    if d["accuracy"] is not None:
        figures.append(noted(f"accuracy {_signed(d['accuracy'] * 100, 1)} pt", quiet["accuracy"]))
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
