"""What a remedy's before/after runs measured against each other, and what that teaches.
Pure functions over plain data, so the reference benchmark and this machine's runs are
read the same way: a *side* is one run's figures as JSON (``side``); ``compare`` sets two
against each other and the phases the remedy acts on; ``lessons`` says what that means;
``claims_row`` puts it beside the claim of the usual advice.
"""

from __future__ import annotations

from collections.abc import Sequence

from svmcore.app.headlines import signed
from svmcore.app.noise import NO_SAVING_PCT, peak_within
from svmcore.spec.config import validate
from svmcore.spec.events import PHASES
from svmcore.spec.units import MiB
from svmcore.spec.result import RunSummary
from svmcore.spec.registry import MLP_MODELS

CLAIM_SLACK_PCT = 5.0  # "as claimed": within this many points of the claimed range


# ---------------------------------------------------------------- one run

def peak_moment(samples: Sequence[tuple]) -> dict | None:
    """The sample (``(t_s, rss, anon, file, ...)`` in bytes) with the highest RSS: when, and how
    the RSS split into anonymous and file-backed pages then (50 Hz: it can miss a shorter spike)."""
    best = max(samples, key=lambda x: x[1], default=None)
    if best is None:
        return None
    t, rss, anon, file = best[:4]
    return {"t_s": round(t, 3), "rss_mb": round(rss / MiB, 1), "anon_mb": round(anon / MiB, 1),
            "file_mb": round(file / MiB, 1)}


def changed_knobs(config: dict) -> dict:
    """The knobs of a config that differ from the defaults (what states a setup)."""
    full = validate(config).to_dict()
    base = validate({}).to_dict()
    return {k: v for k, v in full.items() if base.get(k) != v}


def side(config: dict, s: RunSummary, samples: Sequence = (), run_id: int | None = None,
         status: str | None = None) -> dict:
    """One run's figures, as plain JSON-able data."""
    return {
        "run_id": run_id, "status": status or s.status, "config": changed_knobs(config),
        "peak_mb": rounded(s.peak_rss_mb), "peak_phase": s.peak_phase,
        "phases": {p.name: rounded(p.peak_rss_mb) for p in s.phases if p.peak_rss_mb is not None},
        "floor_mb": rounded(s.floor_mb), "at_peak": peak_moment(samples),
        "samples_per_s": rounded(s.samples_per_s, 0), "train_s": rounded(s.train_s, 2), "wall_s": rounded(s.wall_s, 2),
        "epoch_samples_per_s": [rounded(v, 0) for v in s.epoch_samples_per_s],  # each pass's: a cache's later ones
        "accuracy": rounded(s.accuracy, 4), "balanced_accuracy": rounded(s.balanced_accuracy, 4),
        "nonzero_weights": s.nonzero_weights, "weights": s.weights, "sparse_model_bytes": s.sparse_model_bytes,
        "batches": s.batches, "upcast": s.upcast and s.upcast.to_dict(), "train_data_bytes": s.train_data_bytes,
        "error": s.error_message,
        # a data-parallel run: its largest Dask worker's peak (exact on a LocalCluster started for it), the total
        **({"parallel": {"workers": par.workers, "worker_peak_mb": rounded(s.parallel_peaks.largest_worker_mb),
                         "worker_peak_exact": all(w.peak_exact for w in par.per_worker),
                         "total_sampled_mb": rounded(s.parallel_peaks.all_processes_mb),
                         "cluster_start_s": rounded(par.cluster_start_s, 2)}} if (par := s.parallel) else {}),
    }


def rounded(v: float | None, digits: int = 1) -> float | None:
    return None if v is None else round(float(v), digits)


# ---------------------------------------------------------------- a pair

def _pct(before: float | None, after: float | None) -> float | None:
    """Percent of ``before`` saved by ``after`` (negative: it grew)."""
    return 100 * (before - after) / before if before and after is not None else None


def compare(before: dict, after: dict, acts_on: Sequence[str]) -> dict | None:
    """The pair against each other (None unless both completed): the saving of the run's
    exact peak and of the phases the remedy acts on, the most it could save on this
    run's peak (the phases it does not act on keep their peak), the split at the peak,
    and the change in speed, accuracy and balanced accuracy."""
    if before.get("status") != "completed" or after.get("status") != "completed":
        return None
    bp, ap = before.get("phases") or {}, after.get("phases") or {}
    acted = [p for p in PHASES if p in acts_on and p in bp]
    others = {p: v for p, v in bp.items() if p not in acts_on}
    other_phase = max(others, key=others.get) if others else None
    b_phase = max((bp[p] for p in acted), default=None)
    a_phase = max((ap[p] for p in acted if p in ap), default=None)
    peak = before.get("peak_mb")
    ceiling = _pct(peak, others[other_phase]) if other_phase and peak else None
    b_at, a_at = before.get("at_peak") or {}, after.get("at_peak") or {}
    sps_b, sps_a = before.get("samples_per_s"), after.get("samples_per_s")
    acc = [before.get("accuracy"), after.get("accuracy")]
    bal = [before.get("balanced_accuracy"), after.get("balanced_accuracy")]
    changes = {"speed_change_pct": 100 * (sps_a - sps_b) / sps_b if sps_a and sps_b else None,
               "accuracy_change": acc[1] - acc[0] if None not in acc else None,
               "balanced_accuracy_change": bal[1] - bal[0] if None not in bal else None}
    par = after.get("parallel")
    if par:  # one process became several: the largest worker (what each machine of a cluster needs) against
        # the one process, and every process together (what one machine needs when all run on it)
        worker = par.get("worker_peak_mb")
        return {"peak_before_mb": peak, "peak_after_mb": worker, "peak_saving_pct": _pct(peak, worker),
                "workers": par.get("workers"), "worker_peak_exact": par.get("worker_peak_exact"),
                "coordinator_mb": after.get("peak_mb"), "total_sampled_mb": par.get("total_sampled_mb"),
                "total_saving_pct": _pct(peak, par.get("total_sampled_mb")),
                "linear_pct": 100 * (1 - 1 / par["workers"]) if par.get("workers") else None,
                "owner_before": before.get("peak_phase"), "acts_on": [], **changes}
    return {
        "peak_before_mb": peak, "peak_after_mb": after.get("peak_mb"),
        "peak_saving_pct": _pct(peak, after.get("peak_mb")),
        "owner_before": before.get("peak_phase"), "owner_after": after.get("peak_phase"),
        "acts_on": acted, "phase_before_mb": b_phase, "phase_after_mb": a_phase,
        "phase_saving_pct": _pct(b_phase, a_phase),
        "other_phase": other_phase, "other_phase_mb": others.get(other_phase),
        "ceiling_pct": None if ceiling is None else max(0.0, ceiling),
        "anon_before_mb": b_at.get("anon_mb"), "anon_after_mb": a_at.get("anon_mb"),
        "file_before_mb": b_at.get("file_mb"), "file_after_mb": a_at.get("file_mb"), **changes,
        "model_before": _model(before), "model_after": _model(after),
        "upcast_after": _upcast(after),
        "data_before_mb": (before.get("train_data_bytes") or 0) / MiB or None,
        "data_after_mb": (after.get("train_data_bytes") or 0) / MiB or None,
    }


def _model(side_: dict) -> dict | None:
    """A linear model's nonzero weights and the exact bytes of a sparse copy, beside the
    bytes of its dense float64 weights (None for other models and older results)."""
    if side_.get("nonzero_weights") is None or not side_.get("weights"):
        return None
    return {"nonzero": side_["nonzero_weights"], "weights": side_["weights"],
            "sparse_mb": side_["sparse_model_bytes"] / MiB, "dense_mb": side_["weights"] * 8 / MiB}


def _upcast(side_: dict) -> dict | None:
    """What the float16 upcast cost a run per batch: bytes of the float32 copy (exact) and
    the time to make it (measured), with the run's own train time per batch beside."""
    u = side_.get("upcast")
    if not u:
        return None
    per_batch = side_["train_s"] / side_["batches"] if side_.get("train_s") and side_.get("batches") else None
    return {**u, "train_s_per_batch": per_batch}


def cannot_lower(cmp: dict) -> bool:
    """The phases the remedy does not act on already hold this run's peak (within noise)."""
    return cmp.get("ceiling_pct") is not None and cmp["ceiling_pct"] < NO_SAVING_PCT


def claim_verdict(claim_pct: tuple[float, float] | None, cmp: dict | None) -> str:
    """A few words: what the measured saving of the run's peak says about the claim."""
    if cmp is None or cmp.get("peak_saving_pct") is None:
        return "not measured"
    saved = cmp["peak_saving_pct"]
    if cmp.get("workers"):
        linear = cmp["linear_pct"]
        per = ("no saving per worker" if peak_within(saved)
               else f"per worker {_change(saved).strip(' ()')}")
        total = _change(cmp["total_saving_pct"]).strip(" ()") or "not sampled"
        return f"{per} (linear would be −{linear:.0f}%); all {cmp['workers']} together {total}"
    if saved <= -NO_SAVING_PCT:
        return "raises the peak"
    if cannot_lower(cmp):
        return f"cannot lower this peak ({cmp['other_phase']}, untouched, is within {cmp['ceiling_pct']:.1f}% of it)"
    if peak_within(saved):
        return "no saving"
    if claim_pct is None:
        return f"saves {saved:.0f}%"
    lo, hi = claim_pct
    if saved < lo - CLAIM_SLACK_PCT:
        return "less than claimed"
    if saved > hi + CLAIM_SLACK_PCT:
        return "more than claimed"
    return "as claimed"


def lessons(remedy, cmp: dict | None) -> list[str]:
    """What the pair teaches, in plain sentences (none when it was not measured)."""
    if cmp is None:
        return []
    out = []
    peak, saved = cmp["peak_before_mb"], cmp["peak_saving_pct"]
    if cannot_lower(cmp):
        owner = cmp.get("owner_before")
        held = (f"the run's peak is {owner}'s ({peak:,.0f} MiB), and " if owner and owner != cmp["other_phase"]
                else "")
        out.append(f"It cannot lower this run's peak in this setup: {held}the {cmp['other_phase']} phase, which it "
                   f"does not act on, already peaks at {cmp['other_phase_mb']:,.0f} MiB, within "
                   f"{cmp['ceiling_pct']:.1f}% of it: below that the peak cannot go.")
    elif cmp.get("ceiling_pct") is not None and saved is not None and cmp["ceiling_pct"] < 100 - NO_SAVING_PCT:
        out.append(f"It can lower this run's peak by at most {cmp['ceiling_pct']:.0f}%: the {cmp['other_phase']} "
                   f"phase, which it does not act on, peaks at {cmp['other_phase_mb']:,.0f} MiB.")
    if cmp.get("workers"):
        n = cmp["workers"]
        kind = "exact" if cmp.get("worker_peak_exact") else "sampled"
        out.append(f"The advice claims {remedy.claim}. Here one process peaked at {peak:,.0f} MiB; split over {n} Dask "
                   f"workers the largest worker peaked at {cmp['peak_after_mb']:,.0f} MiB ({kind}), against "
                   f"{peak / n:,.0f} MiB if memory divided by {n}: each worker pays its own floor (Python, numpy, "
                   f"scikit-learn and Dask) and a full copy of the model, and only the data divides.")
        if cmp.get("total_sampled_mb") is not None:
            out.append(f"All processes together (the {cmp['coordinator_mb']:,.0f} MiB coordinator, which runs "
                       f"Dask's scheduler, and the workers) held up to {cmp['total_sampled_mb']:,.0f} MiB "
                       "(sampled at 50 Hz): on one machine, data parallelism multiplies memory, it does not "
                       "divide it.")
        return out
    if saved is not None:
        phase = ""
        if cmp.get("phase_saving_pct") is not None:
            phase = f"; the phases it acts on ({', '.join(cmp['acts_on'])}): " + _arrow(
                cmp["phase_before_mb"], cmp["phase_after_mb"])
        claim = f"The advice claims {remedy.claim}; " if remedy.claim_pct else ""
        out.append(f"{claim}here the run's exact peak went {_arrow(peak, cmp['peak_after_mb'])}{phase}.")
    if remedy.shows_model and cmp.get("model_before") and cmp.get("model_after"):
        b, a = cmp["model_before"], cmp["model_after"]
        out.append(f"The model: {b['nonzero']:,} → {a['nonzero']:,} nonzero weights of {a['weights']:,}; a sparse "
                   f"copy (int32 index + float64 value each) would take {_mib(b['sparse_mb'])} → "
                   f"{_mib(a['sparse_mb'])}, against {_mib(a['dense_mb'])} dense. That is the saved model's size, "
                   "not training memory: while it trains FTRL holds two float64 arrays per feature (z and n) "
                   "whatever L1 zeroes, and the weights it computes from them to score.")
    if remedy.shows_upcast and cmp.get("data_before_mb") and cmp.get("data_after_mb"):
        out.append(f"Stored in memory, the training rows took {_arrow(cmp['data_before_mb'], cmp['data_after_mb'])} "
                   "(exact: the arrays' bytes; only the values shrink, the int32 column ids and row pointers stay).")
    u = cmp.get("upcast_after")
    if remedy.shows_upcast and u:
        share = (f", {100 * u['seconds_per_batch'] / u['train_s_per_batch']:.1f}% of the "
                 f"{u['train_s_per_batch'] * 1e3:,.2f} ms each batch took to train" if u.get("train_s_per_batch") else "")
        out.append(f"Float16 is storage only: each of the {u['batches']:,} batches was copied to float32 to compute, "
                   f"{u['float16_bytes_per_batch'] / 1024:,.1f} KiB of half-precision values becoming "
                   f"{u['float32_bytes_per_batch'] / 1024:,.1f} KiB (exact, from the batches), in "
                   f"{u['seconds_per_batch'] * 1e6:,.0f} µs a batch (measured){share}. Computing in half precision "
                   "would need hardware and libraries this product does not use: GPU tensor cores or AVX512-FP16, "
                   "and a framework that computes in float16.")
    if remedy.moves_to_file and None not in (cmp["anon_before_mb"], cmp["anon_after_mb"], cmp["file_before_mb"],
                                             cmp["file_after_mb"]):
        out.append(f"At the peak, anonymous memory went {cmp['anon_before_mb']:,.0f} → {cmp['anon_after_mb']:,.0f} MiB "
                   f"and file-backed {cmp['file_before_mb']:,.0f} → {cmp['file_after_mb']:,.0f} MiB: mapped pages are "
                   "file-backed, so they still count in RSS, but the kernel can drop them under pressure and read "
                   "them back from the file, which it cannot do with anonymous memory.")
    return out


def _mib(v: float) -> str:
    return f"{v:,.2f} MiB" if v < 10 else f"{v:,.0f} MiB"


def _arrow(before: float | None, after: float | None) -> str:
    if before is None or after is None:
        return "–"
    return f"{before:,.0f} → {after:,.0f} MiB{_change(_pct(before, after))}"


def _change(saved: float | None) -> str:
    """' (−25%)' for a saving of 25%, ' (+3%)' for growth; one decimal under 10%."""
    if saved is None:
        return ""
    change = -saved
    if round(change, 1) == 0:
        return " (0%)"
    text = f"{change:+.1f}%" if abs(change) < 10 else f"{change:+.0f}%"
    return f" ({text.replace('-', '−')})"


# ---------------------------------------------------------------- the claims table

def setup_text(config: dict) -> str:
    """A setup in a few words, from the knobs that differ from the defaults."""
    cfg = validate(config)
    d = validate({}).to_dict()  # the base changed_knobs leaves out
    parts = [cfg.dataset]
    if cfg.is_synthetic:
        cols = f"2^{cfg.features.bit_length() - 1}" if cfg.features & (cfg.features - 1) == 0 else f"{cfg.features:,}"
        parts.append(f"{cfg.rows:,} rows × {cols} columns")
    if cfg.hashing_bits:
        parts.append(f"hashed to 2^{cfg.hashing_bits}")
    parts += [f"{cfg.mode} mode", cfg.representation, cfg.precision, f"batch {cfg.batch_size:,}",
              f"{cfg.epochs} epoch{'s' if cfg.epochs > 1 else ''}"]
    if cfg.model != d["model"]:
        parts.append(cfg.model + (f" ({cfg.hidden})" if cfg.model in MLP_MODELS else ""))
    if cfg.threads != d["threads"]:
        parts.append(f"{cfg.threads} threads")
    return ", ".join(parts)


CLAIMS_COLUMNS = ("remedy", "the advice claims", "setup", "run's exact peak (MiB)", "phases it acts on (MiB)",
                  "at the peak: anonymous · file-backed (MiB)", "speed (samples/s)", "accuracy (balanced)",
                  "verdict", "measured on")


def measured_with(experiment, before: dict | None) -> str:
    """' (measured with rows=100,000)' when the before run measured another setup than
    the experiment states (quick mode's tenth of the rows); '' when it is the stated one."""
    if not before or before.get("config") is None:
        return ""
    stated, measured = changed_knobs(experiment.before), before["config"]
    # both list only the knobs off their defaults: a knob the measured run left at its
    # default (quick mode's 100,000 rows for a stated 1,000,000) is missing from it
    d = validate({}).to_dict()  # the base changed_knobs leaves out
    other = {k: measured.get(k, d.get(k)) for k in dict.fromkeys([*measured, *stated])
             if measured.get(k, d.get(k)) != stated.get(k, d.get(k))}
    if not other:
        return ""
    return " (measured with " + ", ".join(f"{k}={v:,}" if type(v) is int else f"{k}={v}" for k, v in other.items()) + ")"


def claims_row(remedy, experiment, result: dict | None) -> dict:
    """One row of the claims table, in short cells: the remedy, the advice's claim and
    what one of its experiments measured (``result``: source, before, after, cmp and
    error; None for a remedy that has no experiment yet). The Learn page spells out
    the setup and the lessons below the table."""
    row = dict.fromkeys(CLAIMS_COLUMNS, "–")
    row.update({"remedy": remedy.title, "the advice claims": remedy.claim})
    if experiment is None:
        return {**row, "verdict": "not runnable yet (being built)"}
    row["setup"] = experiment.title
    if experiment.impossible:
        return {**row, "verdict": f"not run: {experiment.impossible}"}
    result = result or {}
    cmp, before, after = result.get("cmp"), result.get("before") or {}, result.get("after") or {}
    row["setup"] += measured_with(experiment, before)
    row["verdict"] = result.get("error") or claim_verdict(remedy.claim_pct, cmp)
    if remedy.shows_model and cmp and cmp.get("model_before") and cmp.get("model_after"):
        mb, ma = cmp["model_before"], cmp["model_after"]
        row["verdict"] += (f"; saved model, sparse: {_mib(mb['sparse_mb'])} → {_mib(ma['sparse_mb'])} "
                           f"({ma['nonzero']:,} nonzero of {ma['weights']:,} weights)")
    row["measured on"] = {"this machine": "this machine", "reference": "reference machine"}.get(
        result.get("source"), "–")
    if cmp is None:
        return row
    row["run's exact peak (MiB)"] = _short_arrow(cmp["peak_before_mb"], cmp["peak_after_mb"])
    if cmp.get("workers"):
        kind = "exact" if cmp.get("worker_peak_exact") else "sampled"
        row["run's exact peak (MiB)"] = (f"{cmp['peak_before_mb']:,.0f} → {cmp['peak_after_mb']:,.0f} per worker "
                                         f"({kind}); {cmp['total_sampled_mb'] or 0:,.0f} all {cmp['workers']} "
                                         "with the coordinator (sampled)")
    if cmp["acts_on"]:
        row["phases it acts on (MiB)"] = (f"{_short_arrow(cmp['phase_before_mb'], cmp['phase_after_mb'])} "
                                          f"in {', '.join(cmp['acts_on'])}")
    if None not in (cmp.get("anon_before_mb"), cmp.get("anon_after_mb"), cmp.get("file_before_mb"),
                    cmp.get("file_after_mb")):
        row["at the peak: anonymous · file-backed (MiB)"] = (
            f"{cmp['anon_before_mb']:,.0f} · {cmp['file_before_mb']:,.0f} → "
            f"{cmp['anon_after_mb']:,.0f} · {cmp['file_after_mb']:,.0f}")
    sb, sa = before.get("samples_per_s"), after.get("samples_per_s")
    if sb and sa:
        row["speed (samples/s)"] = f"{_k(sb)} → {_k(sa)}" + _change(-cmp["speed_change_pct"])
    if cmp["accuracy_change"] is not None:
        bal = cmp["balanced_accuracy_change"]
        row["accuracy (balanced)"] = (f"{before['accuracy']:.3f} → {after['accuracy']:.3f}"
                                      + (f" ({signed(bal, 3)})" if bal is not None else ""))
    return row


def measured_row(remedy, ref) -> dict:
    """The claims row of a remedy its own benchmark measures (``remedy.measured_by``): the
    cells its reference (``reference.Reference``, or None before it ran) states."""
    row = dict.fromkeys(CLAIMS_COLUMNS, "–")
    row.update({"remedy": remedy.title, "the advice claims": remedy.claim})
    if ref is None:
        return {**row, "verdict": f"not measured yet (python bench/{remedy.measured_by}.py)"}
    return {**row, **ref.figures["row"], "measured on": "reference machine"}


def _short_arrow(before: float | None, after: float | None) -> str:
    return "–" if before is None or after is None else f"{before:,.0f} → {after:,.0f}{_change(_pct(before, after))}"


def _k(v: float) -> str:
    return f"{v / 1000:,.0f}k" if v >= 10_000 else f"{v:,.0f}"


def speed_spread(measured: dict) -> dict | None:
    """How much the same setup's speed varied within one measurement: the samples/s of
    every 'before' run of the default setup (``measured``: remedy -> experiment ->
    before/after, as in bench/results/remedies.json), and their exact peaks beside. A speed
    change smaller than this spread is noise on that machine. None with fewer than two such runs."""
    runs = [pair["before"] for exps in measured.values() for pair in exps.values()
            if pair["before"].get("config") == {} and pair["before"].get("samples_per_s")]
    if len(runs) < 2:
        return None
    rates, peaks = [r["samples_per_s"] for r in runs], [r["peak_mb"] for r in runs]
    return {"runs": len(rates), "min": min(rates), "max": max(rates), "ratio": max(rates) / min(rates),
            "peak_min_mb": min(peaks), "peak_max_mb": max(peaks)}


def machines(ref) -> dict[tuple[str, str], list[str]]:
    """(machine description, date) -> the remedies measured there then, in the remedies'
    reference (``reference.Reference``); pairs without their own description were measured
    on the reference's machine."""
    out: dict[tuple[str, str], list[str]] = {}
    for key, exps in ref.figures.items():
        for pair in exps.values():
            keys = out.setdefault((pair.get("machine", ref.machine), pair.get("measured", ref.measured)), [])
            if key not in keys:
                keys.append(key)
    return out
