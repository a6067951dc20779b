"""Sweep: a grid of settings through the queue, the trade-off frontier, the best setting under a budget."""

import streamlit as st

from svmcore.app.headlines import run_tag, run_title
from svmcore.app.sweeps import OBJECTIVES, follow_budget, grid_values, sweep_base
from svmcore.spec.errors import SvmcoreError
from svmcore.spec.knobs import KNOBS
from ui import charts as plots
from ui import sweep_views
from ui.messages import plain, show_error
from ui.state import page_setup
from ui.widgets import knob_panel

LABELLED_POINTS = 24
lab = page_setup("Sweep")
st.title("Sweep a grid of settings")
st.markdown("Set the base knobs in the sidebar, pick the knobs to vary and their values, and start. "
            "Runs go through the queue one at a time so that they do not disturb each other's timings, "
            "or to a Dask cluster, one run per Dask worker at a time.")

if "sweep_knobs" not in st.session_state:
    st.session_state.sweep_knobs = sweep_base()
with st.sidebar:
    st.subheader("Base settings")
    base = knob_panel(st.session_state.sweep_knobs, "sweep", lab)

varied = st.multiselect("Knobs to vary", [k for k in KNOBS if k not in ("dataset", "test_file")],
                        default=["batch_size", "precision"], key="varied")
grid_items, grid_error = [], None
cols = st.columns(max(1, len(varied)))
for col, name in zip(cols, varied):
    text = col.text_input(f"{name} values", value=grid_values(name), key=f"grid_{name}",
                          help=f"Comma separated. {KNOBS[name].help}")
    grid_items.append(f"{name}={text}")
with st.container(horizontal=True, gap="medium", vertical_alignment="bottom"):
    seeds = st.number_input("Seeds per point", min_value=1, max_value=5, value=1, key="sweep_seeds", width=180,
                            help="Run every point over this many seeds: the chart then draws each point's spread "
                                 "(its mean, bars from the lowest to the highest run), the run-to-run noise of "
                                 "that setting.")
    search = st.segmented_control("Search", ["grid", "random"], default="grid", key="sweep_search",
                                  format_func={"grid": "grid: every combination",
                                               "random": "random: some drawn"}.get,
                                  help="Random search (as Optuna's RandomSampler): the number of combinations below, "
                                       "drawn at random from the values given, each once; the values may then make "
                                       "more combinations than a sweep runs.") or "grid"
    draws = st.number_input("draws", min_value=1, max_value=200, value=8, key="sweep_draws",
                            width=140) if search == "random" else None
if "seed" not in varied and (seed_entry := lab.sweeps.seed_grid(base, seeds)):
    grid_items.append(seed_entry)
if "alpha" in varied or base.get("alpha") is None:
    st.caption(f"alpha auto is {KNOBS['alpha'].auto}: each run picks it from its own training rows, so a sweep "
               "over rows or data changes alpha too. Every run records the alpha it used and why.")
try:
    grid = grid_items
    points = lab.sweeps.preview(base, grid, draws)
    valid = sum(p.config is not None for p in points)
    below_floor = lab.forecasts.floor_warning([p.config for p in points if p.config is not None])
    if below_floor:
        st.warning(below_floor, icon=":material/warning:")
    st.caption(f"{len(points)} combinations{' drawn at random' if draws else ''}, {valid} valid"
               + ("; skipped: " + plain("; ".join(p.error for p in points if p.error)[:300])
                  if valid < len(points) else ""))
except SvmcoreError as e:
    grid, grid_error = None, str(e)
    show_error(grid_error)

c1, c2 = st.columns([1, 2])
executor = c1.radio("Run on", ["local", "dask"], horizontal=True, key="executor",
                    format_func=lambda e: {"local": "this machine (queue)", "dask": "a Dask cluster"}[e],
                    help="This machine: one run at a time through the queue. A Dask cluster: one task per run, one "
                         "run per Dask worker at a time; the dataset must be at the same path on every worker "
                         "(built-in datasets are generated there).")
scheduler = c2.text_input("Dask scheduler", key="scheduler", disabled=executor != "dask",
                          placeholder="tcp://HOST:8786 (empty: a local cluster on this machine)",
                          help="Workers need svmcore installed and one run slot each: "
                               "dask worker tcp://HOST:8786 --nthreads 1 --resources svmcore_run=1")

if st.button("Start sweep", type="primary", disabled=grid is None, key="start_sweep"):
    try:
        with st.spinner("Connecting to the Dask cluster…" if executor == "dask" else "Queueing…"):
            st.session_state.sweep_id = lab.sweeps.start(base, grid, executor=executor,
                                                        scheduler=scheduler if executor == "dask" else None,
                                                        draws=draws)
        st.session_state.pop("shown_sweep", None)
        st.rerun()
    except SvmcoreError as e:
        show_error(e)

sweeps = lab.sweeps.list()
if not sweeps:
    st.info("No sweeps yet.")
    st.stop()
ids = [s["id"] for s in sweeps]
current = st.session_state.get("sweep_id") or ids[0]
chosen = st.selectbox("Sweep", ids, index=ids.index(current) if current in ids else 0,
                      format_func=lambda i: lab.sweeps.title(next(s for s in sweeps if s["id"] == i)),
                      key="shown_sweep")
st.session_state.sweep_id = chosen
spec = next(s for s in sweeps if s["id"] == chosen)["spec"]
for damage in next(s for s in sweeps if s["id"] == chosen)["damage"]:
    show_error(damage, "warning", prefix=f"**Sweep {chosen}'s record is damaged**, shown without: ")
if spec.get("executor") == "dask":
    st.caption(f"Ran on a Dask cluster: {plain(spec.get('scheduler'))}; one run per Dask worker at a time.")


def progress(status: dict, sweep_id: int) -> None:
    """A sweep still going: how far, what runs, and its Cancel."""
    c1, c2 = st.columns([5, 1])
    running = ", ".join(plain(run_title(r, name=status["names"].get(r, ""))) for r in status["running"])
    c1.progress(status["done"] / max(1, status["total"]),
                text=f"{status['done']} of {status['total']} runs finished"
                     + (f" · running: {running}" if running else " · queued"))
    if c2.button(f"Cancel sweep {sweep_id}", key="cancel_sweep",
                 help="Cancels this sweep's queued and running runs; finished runs and their records stay."):
        lab.sweeps.cancel(sweep_id)
        st.rerun(scope="app")


def budget_row(sweep_id: int, host: str | None) -> tuple[int | None, str]:
    """The budget and the objective of "best setting under"."""
    suggested = lab.sweeps.default_budget(sweep_id, host)
    key = f"budget_{sweep_id}"
    follow_budget(st.session_state, key, suggested)
    c1, c2 = st.columns([1, 2])
    # value=None always: left out, number_input's default is its min_value (1), which a rerun that finds the
    # key without a widget value (a live fragment's) would use while the field still showed the median
    budget = c1.number_input("Best setting under (MiB)", min_value=1, key=key, value=None,
                             placeholder="after the first completed run",
                             help="Answered from this sweep's measured exact peaks. It starts at the median peak "
                                  "of the completed runs, so that about half of them fit.")
    objective = c2.radio("Best by", list(OBJECTIVES), horizontal=True, key="objective", format_func=OBJECTIVES.get)
    # an emptied field, or (seen once in CI, not reproduced) a widget that read None on the rerun that ended
    # a live sweep while it showed the median: answer at the median, named
    return (suggested if budget is None else budget), objective


def best_setting(sweep_id: int, host: str | None, pts: list, budget: int | None, objective: str) -> None:
    best = lab.sweeps.best_under(budget, objective, sweep_id, host) if budget else None
    if best:
        st.success(f"**Best under {budget} MiB by {OBJECTIVES[objective]}: run {best.run_id}** "
                   f"({plain(run_tag(best.label, best.name))}): "
                   f"{'exact peak' if best.peak_exact else 'peak of all its processes (sampled sum)'} "
                   f"{best.peak_mb:.1f} MiB, accuracy "
                   f"{best.accuracy:.4f} (balanced {best.balanced_accuracy or 0:.4f}), "
                   f"{best.samples_per_s or 0:,.0f} samples/s.")
        st.caption(lab.sweeps.speed_cost(best, budget, sweep_id, host))
    elif pts and budget:
        st.warning(f"No completed run of this sweep peaked under {budget} MiB.")


def results(sweep_id: int, live: bool = False) -> None:
    status = lab.sweeps.status(sweep_id)
    if live and status["done"] >= status["total"]:
        st.rerun(scope="app")
    if status["done"] < status["total"]:
        progress(status, sweep_id)
    hosts = lab.sweeps.hosts(sweep_id)
    host = None
    if len(hosts) > 1:
        host = st.selectbox("Runs on host", hosts, key="sweep_host",
                            help="This sweep ran on several machines: peaks and throughput compare like with like "
                                 "only on one machine, so the chart, frontier and best setting are per host.")
    pts = lab.sweeps.points(sweep_id, host)
    budget, objective = budget_row(sweep_id, host)
    # a sweep's points are named beside them (unlabelled they were told apart by hovering only), up to a crowd
    repeats = plots.repeat_marks(pts, lab.sweeps.repeats(sweep_id))
    st.plotly_chart(plots.tradeoff_figure(plots.tradeoff_info(pts, budget), labelled=len(pts) <= LABELLED_POINTS,
                                          repeats=repeats), key="tradeoff")
    if repeats:
        st.caption("Diamonds: a setting run over several seeds, at its mean exact peak and accuracy; the bars run from "
                   "its lowest to its highest run: the run-to-run noise of that setting.")
    shown = sweep_views.parallel_panel(lab, sweep_id, host)
    best_setting(sweep_id, host, pts, budget, objective)
    sweep_views.sweep_table(pts, shown)
    others = {rid: s for rid, s in status["statuses"].items() if s not in ("completed", "oom")}
    if others:
        st.caption("Not on the chart: " + ", ".join(f"{plain(run_title(r, name=status['names'].get(r, '')))} {s}"
                                                    for r, s in others.items()))
    if not live:
        sweep_views.importance_panel(lab, sweep_id)

status = lab.sweeps.status(chosen)
if status["done"] < status["total"]:
    st.fragment(run_every=1.0)(results)(chosen, live=True)
else:
    results(chosen)
