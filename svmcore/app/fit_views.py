"""What the diagnosis loop tells a person on Train, as typed views: the short, ranked
answer under a run that did not fit (the full diagnosis folded below it), and the result
card of "Make it fit" (the run that did not fit beside the one that fits, the knobs
changed and why, and the knobs to put in the sidebar).

Pure: the doctor's report and the fit's result in (``svmcore.app.doctor`` and
``svmcore.app.fit``, as they are), views out, so every wording is tested with ==.
"""

from __future__ import annotations

from dataclasses import dataclass

from svmcore.app.headlines import RunFacts, _mib, _signed, deltas, ending, knob_value_text, noted, speed_text
from svmcore.app.noise import peak_within, within

TOP_REMEDIES = 3  # the ranked answer: the rest is in the folded detail
# knobs "Make it fit" sets to test a setting, not to change it: its budget as the runs' cap
FIT_HARNESS = ("memory_cap_mb", "cap_kind")


def change_text(change: dict) -> str:
    """'memmap', 'float32, batch size 256': a remedy's knobs as the run pickers name them."""
    return ", ".join(knob_value_text(k, v) for k, v in change.items())


@dataclass(frozen=True)
class RemedyLine:
    """One remedy of the ranked answer: what it changes, and what it is predicted to do."""

    rank: int
    title: str
    change: dict
    text: str
    fits: bool


@dataclass(frozen=True)
class DiagnosisAnswer:
    """The short answer under a run that did not fit: the verdict, the best remedies (each
    one a button away from the sidebar) and how much more the folded detail holds."""

    verdict: str
    remedies: tuple[RemedyLine, ...]
    more_remedies: int
    useless: int
    none_why: str = ""  # with no remedy: why none helps


def _cost_words(measured: dict | None) -> str:
    if not measured:
        return ""
    parts = []
    if measured.get("speed_change_pct") is not None:
        parts.append(f"speed {_signed(measured['speed_change_pct'], 0)}%")
    if measured.get("balanced_accuracy_change") is not None:
        parts.append(f"balanced accuracy {_signed(measured['balanced_accuracy_change'], 3)}")
    return f"; it cost {', '.join(parts)} on Learn ({measured['experiment']})" if parts else ""


def diagnosis_answer(d: dict, most: int = TOP_REMEDIES) -> DiagnosisAnswer:
    """The doctor's report (``doctor.diagnose``) as a short ranked answer; a run that grows
    pass after pass says so, and the remedies that stop accumulation come first."""
    lines = [RemedyLine(i, r["title"], dict(r["change"]), f"{change_text(r['change'])}: stops {r['stops']}", False)
             for i, r in enumerate(d.get("growth_remedies") or [], 1)]
    stopping = len(lines)
    for i, r in enumerate(d.get("remedies") or [], stopping + 1):
        if i > most:
            break
        fits = " — fits the budget" if r["fits"] else ""
        lines.append(RemedyLine(i, r["title"], dict(r["change"]),
                                f"{change_text(r['change'])}: predicted peak {_mib(r['predicted_peak_before_mb'])} "
                                f"→ {_mib(r['predicted_peak_after_mb'])}{fits}{_cost_words(r.get('measured'))}",
                                bool(r["fits"])))
    remedies = d.get("remedies") or []
    none_why = "" if remedies else (
        "No knob lowers what Python and its libraries take before any data (the floor), except the lean path "
        "(native parser and solver on a svmlight file)." if d.get("owner") == "imports"
        else f"No remedy of the list acts on the {d.get('owner') or 'peak'} phase for this run.")
    trouble = d.get("trouble") or {}
    grows = f" It grows pass after pass (a cache or a leak): {trouble['reach']}." if "reach" in trouble else ""
    return DiagnosisAnswer(d["verdict"][0].upper() + d["verdict"][1:] + "." + grows, tuple(lines),
                           max(0, len(remedies) - (len(lines) - stopping)), len(d.get("useless") or []), none_why)


@dataclass(frozen=True)
class CardSide:
    """One run of the fit's result card, measured."""

    run_id: int
    title: str
    outcome: str  # 'ran out of memory in load: exact peak 229 MiB under a 180 MiB cgroup cap'
    peak_mb: float | None
    samples_per_s: float | None
    accuracy: float | None
    balanced_accuracy: float | None


@dataclass(frozen=True)
class FitCard:
    """"Make it fit" when it has ended: the run that did not fit beside the one that fits,
    what the fitting run costs against it, the knobs changed and why, and the knobs that
    "Use these knobs" puts in the sidebar."""

    fits: bool
    budget_mb: float
    runs: int
    failed: CardSide | None
    fitting: CardSide | None
    versus: str
    changes: tuple[tuple[str, str], ...]  # (knobs changed, why), in the order applied
    apply: dict
    summary: str
    took_s: float | None = None  # from the start of the loop to its end


def _side(r: RunFacts | None, budget_mb: float) -> CardSide | None:
    if r is None:
        return None
    over = (f"; {r.peak_mb - budget_mb:,.0f} MiB above the budget of {_mib(budget_mb)}"
            if r.status == "completed" and r.peak_mb is not None and r.peak_mb > budget_mb else "")
    return CardSide(r.id, r.title, ending(r) + over, r.peak_mb, r.samples_per_s, r.accuracy, r.balanced_accuracy)


def versus_text(failed: RunFacts | None, fitting: RunFacts | None, budget_mb: float) -> str:
    """'exact peak 229 → 175 MiB (−24%), within the budget of 180 MiB; 1.3× slower, accuracy
    ±0.000 than run 3': the fitting run against the run that did not fit (speed and accuracy
    only where the run that did not fit measured them: an oom run has none)."""
    if fitting is None:
        return "No run fitted the budget."
    if failed is None:
        return f"Exact peak {_mib(fitting.peak_mb)}, within the budget of {_mib(budget_mb)}."
    words = f"Exact peak {_mib(failed.peak_mb)} → {_mib(fitting.peak_mb)}"
    if failed.peak_mb and fitting.peak_mb is not None:
        pct = (fitting.peak_mb / failed.peak_mb - 1) * 100
        words += f" ({_signed(pct, 0)}%{', within noise' if peak_within(pct) else ''})"
    words += f", within the budget of {_mib(budget_mb)}"
    done = RunFacts(failed.id, "completed", peak_mb=failed.peak_mb, samples_per_s=failed.samples_per_s,
                    accuracy=failed.accuracy, balanced_accuracy=failed.balanced_accuracy)
    d = deltas(done, RunFacts(fitting.id, "completed", peak_mb=fitting.peak_mb, samples_per_s=fitting.samples_per_s,
                              accuracy=fitting.accuracy, balanced_accuracy=fitting.balanced_accuracy))
    costs, quiet = [], within(d)
    if d["speed_ratio"] is not None:
        costs.append(noted(speed_text(d["speed_ratio"]), quiet["speed_ratio"]))
    if d["accuracy"] is not None:
        costs.append(noted(f"accuracy {_signed(d['accuracy'], 3)}", quiet["accuracy"]))
    if d["balanced_accuracy"] is not None:
        costs.append(noted(f"balanced accuracy {_signed(d['balanced_accuracy'], 3)}", quiet["balanced_accuracy"]))
    if costs:
        return words + f"; against run {failed.id}: " + ", ".join(costs) + "."
    return words + f"; run {failed.id} did not complete, so it has no speed or accuracy to set beside it."


def fit_card(result: dict, failed: RunFacts | None, fitting: RunFacts | None, took_s: float | None = None) -> FitCard:
    """The card of a fit's ``result`` (``fit.fit``'s dict). ``failed``: the run that did not
    fit (the one "Make it fit" was asked about, else its first attempt that did not fit);
    ``fitting``: its last attempt when it fits."""
    changes, knobs = [], {}
    for a in result["attempts"]:
        for c in a["change"]["changes"]:
            changes.append((change_text(c["knobs"]) if c["knobs"] else "rerun as is", c["why"]))
            knobs.update(c["knobs"])
    final = result["attempts"][-1]["config"] if result["attempts"] else {}
    apply = {k: final.get(k, v) for k, v in knobs.items() if k not in FIT_HARNESS} if result["fits"] else {}
    budget = float(result["budget_mb"])
    return FitCard(bool(result["fits"]), budget, len(result["attempts"]), _side(failed, budget),
                   _side(fitting, budget) if result["fits"] else None,
                   versus_text(failed, fitting if result["fits"] else None, budget), tuple(changes), apply,
                   result["summary"], took_s)

