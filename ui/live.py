"""The run panel: live charts while a run goes, the outcome when it ends."""

from __future__ import annotations

import time

import plotly.graph_objects as go
import streamlit as st

from svmcore.app.headlines import RunFacts, outcome_headline
from svmcore.app.lab import Lab
from svmcore.app.forecasts import CalibrationState, Preview
from svmcore.app.runs import RunView
from svmcore.predict.model import duration_text
from svmcore.spec.events import PHASE_END, PROGRESS
from svmcore.spec.status import RunStatus
from ui import charts as plots
from ui.doctor import diagnosis_panel
from ui.messages import plain, show_error
from ui.sites import sites_panel

OUTCOME_TEXT = {
    "completed": ("", "completed"),
    "oom": ("", "ran out of memory"),
    "failed": ("", "failed"),
    "cancelled": ("", "cancelled"),
    "lost": ("", "lost (its runner or its Dask worker stopped before it reported an outcome)"),
}


def _fmt(v, spec=".1f", unit=""):
    return "–" if v is None else f"{v:{spec}}{unit}"


def progress_line(view: RunView) -> tuple[float, str]:
    prog = next((e for e in reversed(view.events) if e["kind"] == PROGRESS), None)
    # between the last phase's end and the run's outcome there is no phase: it is ending, not starting
    ended = any(e["kind"] == PHASE_END for e in view.events)
    phase = view.phase or ("finishing (writing its outcome)" if ended else "starting")
    if view.remote:
        where = f"running on {view.host}" if view.status == RunStatus.RUNNING else "queued on the Dask cluster"
        return 0.0, f"{where}; its memory samples and events arrive when it ends"
    if view.status == RunStatus.QUEUED:
        return 0.0, f"queued (position {view.queue_position or '?'}); runs go one at a time so timings stay clean"
    if not prog or not prog.get("total"):
        quiet = " · monitoring off: no progress until the run ends" if view.config.get("monitor") == "off" else ""
        return 0.0, f"phase: {phase} · {_fmt(view.elapsed_s, '.0f', ' s')} elapsed{quiet}"
    frac = min(1.0, prog["samples"] / prog["total"])
    rate = prog["samples"] / prog["train_elapsed_s"] if prog.get("train_elapsed_s") else None
    left = (prog["total"] - prog["samples"]) / rate if rate else None
    text = (f"phase: {phase} · epoch {prog['epoch']}/{prog['epochs']} · {prog['samples']:,} of "
            f"{prog['total']:,} samples · about {_fmt(left, '.0f', ' s')} of training left")
    return frac, text


X_CHOICES = {"time": "time since launch", "samples": "samples seen"}


def x_choice(key: str) -> str:
    """The one x axis of the stacked chart: time since launch, or samples seen."""
    return st.segmented_control("x axis", list(X_CHOICES), default="time", format_func=X_CHOICES.get,
                                key=f"{key}_x", label_visibility="collapsed") or "time"


def chart(view: RunView, key: str, x: str) -> None:
    """Memory, throughput and accuracy stacked on one x axis, phases across all three."""
    series = plots.view_series(view, x)
    info = plots.stacked_info([series], live=view.is_live)
    if not info.panels:
        st.caption("No memory samples to draw yet." if view.is_live or x == "time" else
                   "No samples seen: this run ended before training, so it has nothing to draw by samples seen.")
        return
    st.plotly_chart(plots.stacked_figure(info), key=f"{key}_chart", config={"displaylogo": False})
    st.caption(plots.memory_caption(series, None if view.is_live else view.summary.cap_note))


def _metrics(items: list[tuple[str, str, str | None]]) -> None:
    """Metrics side by side that wrap to the next line rather than cut their text."""
    with st.container(horizontal=True, gap="medium"):
        for label, value, help in items:
            st.metric(label, value, help=help, width="content")


def live_metrics(view: RunView) -> None:
    now = view.samples[-1] if view.samples else None
    thr = plots.throughput_info(view.events)
    acc = plots.accuracy_info(view.events)
    prog = next((e for e in reversed(view.events) if e["kind"] == PROGRESS), None)
    _metrics([
        ("RSS now", _fmt(now and now.rss_bytes / 2**20, ",.1f", " MiB"),
         "Latest of the 50 Hz samples: anonymous + file-backed pages" + (
             f" ({now.anon_bytes / 2**20:,.1f} + {now.file_bytes / 2**20:,.1f} MiB)" if now else "")),
        ("high-water mark, this phase", _fmt(now and now.hwm_bytes / 2**20, ",.1f", " MiB"),
         "The kernel's exact peak (VmHWM) since this phase started."),
        ("samples seen", _fmt(prog and prog["samples"], ",.0f"), "Training samples so far, all passes."),
        ("samples/s", _fmt(thr.samples_per_s[-1] if thr.samples_per_s else None, ",.0f"),
         "Training throughput over the last few progress reports."),
        ("accuracy (sample)", _fmt(acc.accuracy[-1] if acc.accuracy else None, ".3f")
         if view.config.get("monitor", "full") == "full" else f"monitoring {view.config['monitor']}",
         f"On a held-out sample of {acc.rows or '–'} rows; the final evaluation uses every test row."),
        ("balanced accuracy", _fmt(acc.balanced[-1] if acc.balanced else None, ".3f"),
         "The mean of the per-class recalls, on the same held-out sample."),
    ])


def announce(view: RunView) -> None:
    """The run this session launched has ended: say how, once, in a toast."""
    if st.session_state.get("announce") != view.id:
        return
    err = view.summary.error_message
    text = outcome_headline(RunFacts(view.id, view.status.value, view.summary), plain(err) if err else None)
    icon = {"completed": ":material/check_circle:", "oom": ":material/memory:",
            "cancelled": ":material/cancel:"}.get(view.status.value, ":material/error:")
    # st.toast first acts on a pending rerun (a fragment's tick, a click) and then the toast is never sent:
    # the promise is dropped only once it is on its way, so the next run says it instead
    st.toast(text, icon=icon, duration="long")
    st.session_state.pop("announce")


def outcome(view: RunView) -> None:
    s = view.summary
    facts = RunFacts(view.id, view.status.value, s)
    if view.status == RunStatus.OOM and s.parallel_peaks:  # a Dask worker may be what hit the cap: say which
        st.warning(f"**Run {view.id} ran out of memory** in phase **{s.phase}**: "
                   f"{plain(s.error_message or 'out of memory')}. Memory until then: {s.parallel_peaks.text()}.")
    elif view.status == RunStatus.OOM:
        st.warning(f"**Run {view.id} ran out of memory** in phase **{s.phase}**, at an exact peak of "
                   f"**{_fmt(s.peak_rss_mb, '.0f')} MiB** under a {s.cap} cap of {_fmt(s.cap_mb, '.0f')} MiB. "
                   "That is the measurement: this setting needs more memory than the cap allows.")
    elif view.status == RunStatus.COMPLETED:
        st.success(f"**{outcome_headline(facts)}**")
    elif view.status == RunStatus.CANCELLED:
        st.info(f"**{outcome_headline(facts)}**")
    else:
        # the worker's message quotes the data (a bad line): shown as plain text
        st.error(f"**Run {view.id} {OUTCOME_TEXT.get(view.status.value, ('', view.status.value))[1]}**"
                 + (f": {plain(s.error_message)}" if s.error_message else "")
                 + (f" (phase {plain(s.phase)})" if s.phase else ""))
    if s.cap_note:
        st.caption(s.cap_note)
    growth = s.growth
    if growth is not None:  # a line under the outcome; a run that grows is a warning doctor explains
        line = growth.text()[0].upper() + growth.text()[1:] + "."
        if growth.grows:
            st.warning(f"{line} `doctor {view.id}` says when it meets a cap or budget.", icon=":material/trending_up:")
        else:
            st.caption(line)
    once, own = facts.one_time
    if once is not None:
        st.info(f"**One-time preparation.** This run's prepare phase built copies of the data that later runs "
                f"of the same data reuse ({plain(', '.join(s.prepared_once))}), and that phase owns the "
                f"exact peak: {once:,.1f} MiB. Without it the run's exact peak is "
                f"**{own:,.1f} MiB** (the highest of its other phases, each the kernel's high-water "
                "mark reset at its start): what every later run of this setting pays, and what Compare compares.",
                icon=":material/history:")
    peaks = s.parallel_peaks
    _metrics(([
        ("all processes (sampled)", _fmt(peaks.all_processes_mb, ",.1f", " MiB"),
         "The coordinator's and every Dask worker's RSS sampled at 50 Hz, summed at each instant: what the run "
         "held on this machine, sampled (a short spike between samples is missed)."),
        (f"largest worker ({'exact' if peaks.largest_worker_exact else 'sampled'})",
         _fmt(peaks.largest_worker_mb, ",.1f", " MiB"),
         f"Dask worker {peaks.largest_worker}'s peak: its kernel high-water mark on a cluster started for the run "
         "(exact), else its sampled maximum."),
    ] if peaks else []) + [
        ("coordinator exact peak" if peaks else "exact peak", _fmt(s.peak_rss_mb, ",.1f", " MiB"),
         "The worker's kernel high-water mark (VmHWM, read at each phase end and at 50 Hz): exact, "
         "not sampled. If the worker is killed, exact up to the last reading."
         + (" For a data-parallel run: the run's own process (the coordinator) alone." if peaks else "")),
    ] + ([
        ("charged to its cgroup (exact)", _fmt(s.cgroup_peak_mb, ",.1f", " MiB"),
         f"What the {s.cap_text} cap limits: the memory the kernel charges to the run's cgroup (memory.max_usage_in_bytes), "
         "page cache included; the exact peak."),
        ("cannot be reclaimed (sampled)", _fmt(s.cgroup_held_peak_mb, ",.1f", " MiB"),
         "The highest 50 Hz sample of that charge less its page cache: what the kernel cannot take back, and so "
         "what decides whether the run is killed at its cap."),
    ] if s.cap == "cgroup" and s.cgroup_held_peak_mb is not None else []) + [
        ("sampled max", _fmt(s.peak_sampled_mb, ",.1f", " MiB"),
         f"Highest of {s.n_samples:,} RSS samples at {s.sample_hz} Hz; can miss short spikes, which the exact "
         "peak does not."),
        ("floor", _fmt(s.floor_mb, ",.0f", " MiB"),
         "Peak of the imports phase: Python, numpy, scipy and scikit-learn before any data."),
        ("wall time", _fmt(s.wall_s, ",.1f", " s"), f"training: {_fmt(s.train_s, ',.1f', ' s')}"),
        ("samples/s", _fmt(s.samples_per_s, ",.0f"), "training samples per second of the train phase"),
        ("accuracy", _fmt(s.accuracy, ".4f"), f"on all {s.test_rows or '–'} held-out rows"),
        ("balanced accuracy", _fmt(s.balanced_accuracy, ".4f"),
         "The mean of the per-class recalls: 0.5 for a two-class model that always predicts one "
         f"class. F1 of {s.f1_of or '–'}: {_fmt(s.f1, '.4f')}. Always predicting the "
         f"majority class would score an accuracy of {_fmt(s.baseline_accuracy, '.4f')}."),
    ] + ([("nonzero weights", f"{s.nonzero_weights:,}",
           (f"Exact: {s.nonzero_weights:,} of the linear model's {s.weights:,} weights are not zero. A sparse copy "
            f"(int32 index + float64 value each) takes {s.sparse_model_bytes / 2**20:,.2f} MiB, against "
            f"{s.weights * 8 / 2**20:,.2f} MiB dense. That is the saved model; training holds the solver's full "
            "arrays whatever is zero."))] if s.nonzero_weights is not None and s.weights else []))
    if s.kept:
        st.caption("Kept while training: " + "; ".join(s.kept.lines()) + ".")
    if s.upcast:
        u = s.upcast
        st.caption(f"float16 is storage only: each of the {u.batches:,} training batches was copied to float32 to "
                   f"compute, {u.float16_bytes_per_batch / 1024:,.1f} KiB becoming "
                   f"{u.float32_bytes_per_batch / 1024:,.1f} KiB (exact), in {u.seconds_per_batch * 1e6:,.0f} µs "
                   f"a batch (measured; {u.seconds_total:,.2f} s in all). Computing in half precision would need "
                   "hardware and libraries this product does not use (GPU tensor cores or AVX512-FP16, and a framework "
                   "that computes in float16).")


def details(view: RunView) -> None:
    """What a finished run measured beyond the headline numbers."""
    s = view.summary
    for warning in s.score_warnings():
        st.warning(warning.text[0].upper() + warning.text[1:] + ".", icon=":material/balance:")
    if s.regularisation:
        reg = s.regularisation
        st.caption(f"Regularisation: {reg.name} {reg.value:.3g} ({reg.why}).")
    for line in s.distillation.lines() if s.distillation else ():
        st.caption(line[0].upper() + line[1:] + ".")
    conf = s.confusion
    if conf and len(conf.classes) <= 10:
        with st.expander("Confusion matrix and per-class recall"):
            import pandas as pd
            table = pd.DataFrame(conf.matrix, index=[f"true {c}" for c in conf.classes],
                                 columns=[f"predicted {c}" for c in conf.classes])
            table["recall"] = [s.per_class_recall.get(c) for c in conf.classes]
            st.dataframe(table, key=f"confusion_{view.id}")
    phases = s.phases
    if phases:
        owner = s.peak_phase
        st.caption("Exact peak of each phase (the kernel's high-water mark, reset at each phase start): "
                   + " · ".join(f"{'**' if p.name == owner else ''}{p.name} {_fmt(p.peak_rss_mb, '.0f')} MiB"
                                f" in {_fmt(p.wall_s, '.2f')} s{'** ← owns the peak' if p.name == owner else ''}"
                                for p in phases))
    pred = s.prediction
    if pred and pred.predicted_peak_mb and s.peak_rss_mb:
        err = pred.predicted_peak_mb / s.peak_rss_mb - 1
        per_phase = " · ".join(f"{p.name} {_fmt((pred.phases_mb or {}).get(p.name), '.0f')}"
                               f" / {_fmt(p.peak_rss_mb, '.0f')}" for p in phases)
        took = ""
        cpu = next((p.cpu_s for p in phases if p.name == "train" and p.cpu_s is not None), None)
        if pred.predicted_train_s is not None and cpu is not None:
            took = (f" Train phase forecast {pred.predicted_train_s:,.1f} s of CPU time (rough) against "
                    f"{cpu:,.1f} s measured ({s.train_s or 0:,.1f} s of wall time).")
        st.caption(f"**Predicted before launch: {pred.predicted_peak_mb:.0f} MiB** (in {pred.peak_phase}) "
                   f"against the measured exact {s.peak_rss_mb:.0f} MiB: **{err * 100:+.1f}%**. "
                   f"Predicted / measured per phase (MiB): {per_phase}.{took}")
    par = s.parallel
    if par:
        workers = " · ".join(f"{w.worker}: {_fmt(w.peak_rss_mb, ',.0f')} MiB ({_fmt(w.rows, ',')} rows)"
                             for w in par.per_worker)
        st.caption(f"**Data-parallel on {par.workers} Dask workers** ({plain(par.scheduler)}; the cluster took "
                   f"{_fmt(par.cluster_start_s, '.1f')} s to start). Each worker's peak: {workers}; "
                   f"{plain(par.worker_peak_source)}. All processes together: "
                   f"**{_fmt(par.total_peak_sampled_mb, ',.0f')} MiB**; {plain(par.total_source)}.")
    rates = s.epoch_samples_per_s
    if len(rates) > 1:
        st.caption("Samples/s per pass: " + " · ".join(f"{i + 1}: {_fmt(r, ',.0f')}" for i, r in enumerate(rates))
                   + ("; every pass read the binary spill, written before the first (the file's labels come "
                      "in long runs: a pass over the text would bring each run's rows together)"
                      if s.spill and s.spill.read_back and s.spill.filled_first else
                      "; later passes read the binary spill written in the first"
                      if s.spill and s.spill.read_back else ""))


def preload() -> None:
    """Mount one hidden element of each kind the run panel draws. Streamlit loads each
    kind's code the first time one appears: without this, a session's first launch showed
    loading skeletons for 4-6 s on a busy machine instead of its live chart."""
    with st.container(key="preload"):  # hidden by assets/style.css
        st.plotly_chart(go.Figure(), key="preload_chart")
        st.metric("preload", "0")
        st.progress(0.0)
        st.segmented_control("preload", ["time"], key="preload_x", label_visibility="collapsed")


def run_panel(lab: Lab, run_id: int, key: str = "run", drawn_status: str | None = None) -> None:
    """Live while the run goes (a fragment refreshed every second), outcome after.
    The fragment draws the same elements in the same order on every refresh, so
    nothing is blanked while it redraws. `drawn_status` is the status the rest of
    the page already shows (the run picker's label): read a moment earlier, it may
    be older than this view's, and then the whole page is drawn again."""
    view = lab.runs.view(run_id)
    if view is None:
        st.info(f"Run {run_id} no longer exists.")
        return
    if drawn_status is not None and drawn_status != view.status.value:
        st.rerun()  # the run moved on between the page's two reads (CI saw "queued" stay in the picker)
    if view.damage:  # what could be read is drawn; its outcome and diagnosis would read the damaged parts as empty
        show_error("; ".join(view.damage), prefix=f"**Run {run_id} ({view.status.value}): its record is damaged**, "
                                                  "shown without: ")
    if not view.is_live:
        announce(view)
        if not view.damage:
            outcome(view)
        chart(view, key, x_choice(key))
        sites_panel(lab, view, key)
        details(view)
        if not view.damage:
            diagnosis_panel(lab, view)
        return

    @st.fragment(run_every=1.0)
    def live():
        v = lab.runs.view(run_id)
        if v is None or v.status != view.status:  # queued -> running -> its end: the whole page
            st.rerun(scope="app")  # follows, so the run picker's label says it too
            return
        top = st.columns([3, 1], vertical_alignment="center")
        frac, text = progress_line(v)
        with top[0]:
            st.progress(frac, text=text)
        with top[1]:
            if st.button("Cancel run", key=f"{key}_cancel", type="secondary"):
                lab.runs.cancel(run_id)
                deadline = time.monotonic() + 2.5
                while time.monotonic() < deadline and (lab.runs.view(run_id) or v).is_live:
                    time.sleep(0.1)
                st.rerun(scope="app")
        live_metrics(v)
        chart(v, key, x_choice(key))

    live()


def prediction_panel(lab: Lab, preview: Preview) -> float | None:
    """The memory model's forecast for the knobs in the sidebar, before launch, and the
    warnings it gives (a lower bound of the peak before calibration); returns the forecast
    peak (None before calibration)."""
    for text in lab.forecasts.launch_warnings(preview):  # (they never block a launch)
        st.warning(text, icon=":material/warning:")
    state = lab.forecasts.calibration_state()
    if state.running:
        _calibration_progress(lab)
        return None
    if not state.calibrated:
        if state.error:
            show_error(state.error, prefix="Calibration failed: ")
        c1, c2 = st.columns([3, 1])
        c1.caption(f"Predictions need the memory model fitted to this machine once: {state.total} small real "
                   f"runs, {state.samples / 1e6:,.1f} million training samples in all, one at a time (the time "
                   "left is forecast from the first runs as it goes). Until then runs are measured but not "
                   "forecast (the warnings above use a lower bound of the peak).")
        if c2.button("Calibrate", key="calibrate"):
            lab.forecasts.start_calibration()
            st.rerun()
        return None
    pred = preview.launch.prediction
    if pred is None:
        return None
    parts = " · ".join(f"{k} {v:,.0f}" for k, v in pred.parts.items() if v >= 0.5)
    took = pred.predicted_train_s
    took = (f" Training: **{duration_text(took)} of CPU time** (a rough forecast from the calibration runs' "
            "per-sample and per-step costs; longer in wall time while other programs share the CPUs)."
            if took is not None else "")
    st.info(f"**Predicted exact peak: {pred.predicted_peak_mb:,.0f} MiB**, in the {pred.peak_phase} phase "
            f"({parts} MiB). A forecast from the memory model calibrated on this machine; the run's measured "
            f"exact peak is shown beside it when it ends.{took}", icon=":material/query_stats:")
    par = pred.parallel
    if par:
        st.caption(f"Data-parallel: that peak is the run's own process (the coordinator). Each of the "
                   f"{par.workers} Dask workers: **{par.per_worker_mb:,.0f} MiB**; all processes: "
                   f"**{par.total_mb:,.0f} MiB** ({par.basis}).")
    return pred.predicted_peak_mb


@st.fragment(run_every=1.0)
def _calibration_progress(lab: Lab) -> None:
    state = lab.forecasts.calibration_state()
    if not state.running:
        st.rerun()  # the whole page, now with the prediction
    st.progress(state.done / max(1, state.total), text=calibration_text(state))


def calibration_text(state: CalibrationState) -> str:
    """'Calibrating ...: run 27 of 37 · 9 min 30 s so far · about 4 min left'."""
    text = f"Calibrating the memory model on this machine: run {min(state.done + 1, state.total)} of " \
           f"{state.total}"
    if state.elapsed_s is not None:
        text += f" · {state.elapsed_s / 60:,.1f} min so far"
    left = state.left_s
    return text + (f" · {duration_text(left)} left (forecast from the runs done so far)" if left is not None
                   else " · the time left is forecast once two runs have ended")
