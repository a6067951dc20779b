"""Learn: each memory remedy, why it works, what it costs, and a measured before/after."""

import pandas as pd
import streamlit as st

from svmcore.spec.errors import SvmcoreError
from ui.messages import show_error
from ui.state import page_setup

lab = page_setup("Learn")
st.title("Learn the remedies")
st.markdown("Every remedy trades memory for something else. Each section says what it does and why, "
            "and one click measures it on **this** machine: two runs, before and after, through the "
            "queue. Where the peak happens decides what a remedy can save: a remedy that acts on "
            "training cannot lower a peak that the load phase owns, so the phase it acts on is shown too.")

results = {r["key"]: r for r in lab.learn.results()}


def _mb(v):
    return "–" if v is None else f"{v:,.1f} MiB"


def _pct(v):
    return "–" if v is None else f"{v:+.0f}%".replace("+-", "−")


for remedy in lab.learn.remedies():
    r = results.get(remedy.key, {})
    with st.expander(f"**{remedy.title}**", expanded=False):
        st.markdown(f"**What it does.** {remedy.what}\n\n**Why it saves memory.** {remedy.why}\n\n"
                    f"**What it costs.** {remedy.cost}")
        change = ", ".join(f"`{k}={v}`" for k, v in remedy.change.items())
        st.caption(f"Experiment: the base ({', '.join(f'{k}={v}' for k, v in remedy.base.items())}) "
                   f"before, and with {change} after.")
        if st.button("Measure before/after", key=f"remedy_{remedy.key}"):
            try:
                b, a = lab.learn.run_remedy(remedy.key)
                st.success(f"Queued runs {b} (before) and {a} (after). Watch them on Train or Compare; "
                           "this page shows the result when both have finished.")
            except SvmcoreError as e:
                show_error(e)
        if r.get("after_id"):
            c = st.columns(4)
            c[0].metric("exact peak before → after", _mb(r.get("after_peak_mb")),
                        delta=None if r.get("saving_pct") is None else f"{-r['saving_pct']:.0f}%",
                        delta_color="inverse", help=f"before: {_mb(r.get('before_peak_mb'))}")
            if r.get("phase"):
                c[1].metric(f"{r['phase']} phase peak change",
                            _pct(-r["phase_saving_pct"]) if r.get("phase_saving_pct") is not None else "–")
            acc_b, acc_a = r.get("before_accuracy"), r.get("after_accuracy")
            c[2].metric("accuracy", "–" if acc_a is None else f"{acc_a:.4f}",
                        delta=None if acc_a is None or acc_b is None else f"{acc_a - acc_b:+.4f}")
            thr_b, thr_a = r.get("before_samples_per_s"), r.get("after_samples_per_s")
            c[3].metric("samples/s", "–" if thr_a is None else f"{thr_a:,.0f}",
                        delta=None if not thr_a or not thr_b else f"{100 * (thr_a - thr_b) / thr_b:+.0f}%")
            st.caption(f"Runs {r['before_id']} (before) and {r['after_id']} (after).")

st.subheader("Measured savings on this machine")
table = pd.DataFrame([{
    "remedy": r["remedy"], "peak before": r.get("before_peak_mb"), "peak after": r.get("after_peak_mb"),
    "saving of the run's peak (%)": r.get("saving_pct"), "phase": r.get("phase") or "whole run",
    "saving in that phase (%)": r.get("phase_saving_pct"),
    "accuracy before": r.get("before_accuracy"), "accuracy after": r.get("after_accuracy"),
    "samples/s before": r.get("before_samples_per_s"), "samples/s after": r.get("after_samples_per_s"),
} for r in results.values()])
st.dataframe(table, hide_index=True, key="savings", column_config={
    c: st.column_config.NumberColumn(format="%.1f") for c in table.columns if "peak" in c or "%" in c})
st.caption("Empty rows have not been measured yet: press *Measure before/after* in that section. "
           "Peaks are exact (the kernel's high-water mark).")
