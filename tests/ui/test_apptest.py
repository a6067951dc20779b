"""Headless UI tests of every page with streamlit.testing.v1.AppTest (no browser).

Pages are reached the way Streamlit reaches them: ``app.py`` is the entry point and
the other pages are switched to with ``AppTest.switch_page`` (the sidebar's
``st.page_link`` paths only resolve relative to the entry point). History is made
with the real engine (``svmcore.app.lab.Lab``), so runs are real worker processes.
"""

from __future__ import annotations

import glob
import json
import os
import re
import time

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block

from svmcore.app.remedies import REMEDIES
from svmcore.engine.registry import get_active
from svmcore.spec.knobs import BUILTIN_DATASETS, KNOBS
from svmcore.spec.status import RunStatus
from svmcore.store.sqlite import Store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = {"rows": 20_000, "features": 65_536, "epochs": 2}  # a run of about a second

ENTRY = os.path.join(ROOT, "app.py")
PAGES = ["app.py"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "pages", "*.py")))
TIMEOUT = 60


# ---------------------------------------------------------------- helpers

def open_page(page: str = "app.py") -> AppTest:
    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT)
    at.run()
    if page != "app.py":
        assert_clean(at)
        at.switch_page(page).run()
    return at


def assert_clean(at: AppTest) -> None:
    """No uncaught exception on the page (the app redacts details, so say where)."""
    assert not at.exception, [e.value for e in at.exception] + [getattr(e, "stack_trace", None) for e in at.exception]


def displayed(markdown: str) -> str:
    """The text a Markdown body shows (backslash escapes resolved): error text from
    exceptions and files is escaped by ui.messages so that it shows exactly as written."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown)


def texts(elements) -> list[str]:
    return [displayed(str(e.value)) for e in elements]


def chart(at: AppTest, key: str) -> dict:
    """The Plotly figure (as JSON) of the st.plotly_chart with this key."""
    found = [c for c in at.get("plotly_chart") if c.key == key]
    assert len(found) == 1, f"no plotly chart with key {key!r}: {[c.key for c in at.get('plotly_chart')]}"
    return json.loads(found[0].proto.spec)


def traces(fig: dict) -> dict[str, int]:
    """trace name -> number of x values."""
    return {d.get("name"): len(d.get("x") or []) for d in fig["data"]}


def memory_curves(fig: dict) -> dict[str, int]:
    """The stacked chart's memory panel (the top one, y axis "y"): run curve name -> points
    (reference lines such as the exact peak have two points and are left out)."""
    return {d["name"]: len(d.get("x") or []) for d in fig["data"]
            if d.get("yaxis", "y") == "y" and (d["name"] == "total RSS" or d["name"].startswith("run "))}


def has_key(at: AppTest, key: str) -> bool:
    try:
        at.get_by_key(key)
        return True
    except KeyError:
        return False


def store_runs(home: str):
    s = Store(home)
    try:
        return s.list_runs()
    finally:
        s.close()


def wait_run_finished(run_id: int, home: str, timeout: float = 90) -> RunStatus:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = get_active(home, run_id)
        if run is not None and os.path.abspath(run.home) == os.path.abspath(home):
            run.wait(min(5.0, max(0.1, deadline - time.monotonic())))
        rec = next((r for r in store_runs(home) if r.id == run_id), None)
        if rec is not None and rec.status.is_finished():
            return rec.status
        time.sleep(0.1)
    raise AssertionError(f"run {run_id} did not finish within {timeout} s")


def sidebar_elements(at: AppTest) -> list:
    """Sidebar elements and widgets in display order (containers such as expanders left out)."""
    return [n for n in at.sidebar if not isinstance(n, Block)]


def visible_knobs(model: str, dataset: str = "sparse-text", cap_set: bool = False) -> list[str]:
    """Knobs the registry says apply to this model/dataset. cap_kind only means
    something once memory_cap_mb is set, so it is asked for only then."""
    out = []
    for name, k in KNOBS.items():
        if k.applies_to and model not in k.applies_to:
            continue
        if k.only_with and KNOBS[k.only_with[0]].default != k.only_with[1]:
            continue  # (the FTRL knobs: shown once solver is ftrl)
        if name == "cap_kind" and not cap_set:
            continue
        if name == "scheduler" and KNOBS["workers"].default == 1:
            continue  # a scheduler serves data-parallel runs only: shown once workers > 1
        if name in ("rows", "features", "nnz_per_row") and dataset not in ("sparse-text", "dense"):
            continue
        out.append(name)
    return out


def check_knob_widget(at: AppTest, name: str) -> None:
    k = KNOBS[name]
    key = f"train_{name}"
    if name == "dataset":
        w = at.selectbox(key=key)
        assert list(w.options)[:len(BUILTIN_DATASETS)] == list(BUILTIN_DATASETS)
        assert w.value == k.default
    elif name == "test_file":  # optional, but a choice of file (or hold-out) rather than an on/off box
        w = at.selectbox(key=key)
        assert w.options[0].startswith("(hold out")
    elif k.type is bool:
        assert at.toggle(key=key).value is k.default
    elif k.choices:
        w = at.selectbox(key=key)
        assert list(w.options) == [str(c) for c in k.choices], (name, w.options, k.choices)
    elif k.optional:
        on = at.checkbox(key=f"{key}_on")
        assert on.value is (k.default is not None)
        assert not has_key(at, key) or k.default is not None, f"{key} shown while its checkbox is off"
    elif k.type in (int, float):
        w = at.number_input(key=key)
        assert w.value == k.default, (name, w.value, k.default)
        assert w.min == k.min and w.max == k.max, (name, w.min, w.max, k.min, k.max)
    else:
        assert at.text_input(key=key).value == str(k.default)


# ---------------------------------------------------------------- every page runs

EMPTY_EXPECT = {
    "app.py": lambda at: any("No runs yet" in t for t in texts(at.markdown)),
    "pages/1_Compare.py": lambda at: any("No runs yet" in t for t in texts(at.info)),
    "pages/2_Sweep.py": lambda at: any("No sweeps yet" in t for t in texts(at.info)),
    "pages/3_Learn.py": lambda at: sum('<table class="claims">' in m.value for m in at.markdown) == 1,
    "pages/4_Data.py": lambda at: at.file_uploader(key="upload") is not None and len(at.metric) == 5,
    "pages/5_Story.py": lambda at: any("A story needs at least two runs" in t for t in texts(at.info)),
}


def test_pages_are_all_covered():
    assert set(PAGES) >= set(EMPTY_EXPECT), PAGES


@pytest.mark.parametrize("page", PAGES)
def test_page_runs_with_empty_history(app_home, page):
    at = open_page(page)
    assert_clean(at)
    assert not at.error, texts(at.error)
    assert at.title, "page has no title"
    if page in EMPTY_EXPECT:
        assert EMPTY_EXPECT[page](at), f"{page}: empty-history content missing"
    assert not store_runs(app_home), "opening a page must not start runs"


def test_a_damaged_history_is_set_aside_and_the_page_says_where(app_home):
    with open(os.path.join(app_home, "runs.sqlite"), "wb") as f:
        f.write(b"this is not sqlite" * 300)
    at = open_page("app.py")
    assert_clean(at)
    [moved] = [p for p in glob.glob(os.path.join(app_home, "runs.sqlite.damaged-*"))
               if not p.endswith(("-wal", "-shm"))]
    assert any(moved in t and "runs recover" in t for t in texts(at.warning)), texts(at.warning)
    assert any("No runs yet" in t for t in texts(at.markdown))


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_runs_with_history(history_home, page):
    h = history_home
    at = open_page(page)
    assert_clean(at)
    assert not at.error, texts(at.error)
    if page == "app.py":
        latest = max(h["sweep_runs"])
        assert any(f"Run {latest} completed" in t for t in texts(at.success)), texts(at.success)
        shown = at.selectbox(key="shown_run")
        for rid, status in [(h["completed"], "completed"), (h["oom"], "oom")] + [(i, "completed") for i in h["sweep_runs"]]:
            assert any(o.startswith(f"run {rid} · {status} ·") for o in shown.options), (rid, shown.options)
        assert memory_curves(chart(at, "train_chart")).get("total RSS", 0) > 5
    elif page == "pages/1_Compare.py":
        assert "Knobs that differ" in texts(at.subheader)
        mem = memory_curves(chart(at, "cmp_chart"))
        assert len(mem) == 2 and all(n > 5 for n in mem.values()), mem
    elif page == "pages/2_Sweep.py":
        assert "Pareto frontier" in traces(chart(at, "tradeoff"))
        assert any("Best under" in t for t in texts(at.success)), texts(at.success)
    elif page == "pages/3_Learn.py":
        assert sum(r.title in m.value for m in at.markdown for r in REMEDIES if '<table class="claims">' in m.value) \
            == len(REMEDIES)
    elif page == "pages/4_Data.py":
        assert len(at.metric) == 5
    elif page == "pages/5_Story.py":
        assert any("choose at least one remedy" in t for t in texts(at.info)), texts(at.info)


def test_train_shows_oom_and_completed_outcomes(history_home):
    h = history_home
    at = open_page()
    at.selectbox(key="shown_run").set_value(h["oom"]).run()
    assert_clean(at)
    warn = " ".join(texts(at.warning))
    assert f"Run {h['oom']} ran out of memory" in warn and "rlimit" in warn, warn
    assert memory_curves(chart(at, "train_chart")).get("total RSS", 0) > 0
    at.selectbox(key="shown_run").set_value(h["completed"]).run()
    assert_clean(at)
    assert any(f"Run {h['completed']} completed" in t for t in texts(at.success)), texts(at.success)
    assert not at.warning or not any("ran out of memory" in t for t in texts(at.warning))
    # the run panel says which alpha the run trained with and why (auto: chosen from its training rows)
    assert any(t.startswith("Regularisation: alpha ") and "auto:" in t and "training rows" in t
               for t in texts(at.caption)), texts(at.caption)


# ---------------------------------------------------------------- knob widgets = registry

@pytest.mark.parametrize("model", KNOBS["model"].choices)
def test_train_knob_widgets_match_registry(app_home, model):
    at = open_page()
    assert_clean(at)
    if model != KNOBS["model"].default:
        at.selectbox(key="train_model").set_value(model).run()
        assert_clean(at)
    for name in visible_knobs(model):
        if name == "model":
            assert list(at.selectbox(key="train_model").options) == list(KNOBS["model"].choices)
            continue
        check_knob_widget(at, name)
    for name, k in KNOBS.items():
        if k.applies_to and model not in k.applies_to:
            assert not has_key(at, f"train_{name}"), f"{name} shown for model {model}"
    assert not has_key(at, "train_cap_kind"), "cap_kind shown although no memory cap is set"


def test_the_ftrl_knobs_show_once_the_solver_is_ftrl(app_home):
    at = open_page()
    ftrl = ("l1", "l2", "ftrl_alpha", "ftrl_beta")
    assert not any(has_key(at, f"train_{n}") for n in ftrl)
    at.selectbox(key="train_solver").set_value("ftrl").run()
    assert_clean(at)
    for n in ftrl:
        check_knob_widget(at, n)


def test_optional_knobs_reveal_their_input(app_home):
    at = open_page()
    at.checkbox(key="train_features_on").check()
    at.checkbox(key="train_memory_cap_mb_on").check()
    at.checkbox(key="train_alpha_on").check()  # unset = auto (chosen from the training rows)
    at.run()
    assert_clean(at)
    for name in ("features", "memory_cap_mb", "alpha"):
        w = at.number_input(key=f"train_{name}")
        assert (w.min, w.max) == (KNOBS[name].min, KNOBS[name].max), name
        assert KNOBS[name].min <= w.value <= KNOBS[name].max, name
    # cap_kind only matters (and only shows) once a cap is set
    assert list(at.selectbox(key="train_cap_kind").options) == list(KNOBS["cap_kind"].choices)


# ---------------------------------------------------------------- Data page: uploads

@pytest.mark.parametrize("name,content,expect", [
    ("bad.svm", b"1 1:0.5\n-1 2:x\n", "line 2"),
    ("empty.svm", b"", "empty"),
    ("picture.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100), "is not a dataset: it holds binary data"),
], ids=["malformed-line-2", "empty", "binary"])
def test_bad_upload_shows_its_error(app_home, name, content, expect):
    at = open_page("pages/4_Data.py")
    at.file_uploader(key="upload").set_value((name, content, "text/plain"))
    at.run()
    assert_clean(at)
    errors = texts(at.error)
    assert len(errors) == 1 and expect in errors[0], errors
    assert not at.success, texts(at.success)
    uploads = os.path.join(app_home, "uploads")
    assert not os.path.isdir(uploads) or not os.listdir(uploads), "a rejected upload was kept"


EVIL_LINES = ["[x](http://evil.example/) ![i](http://evil.example/i.png)",
              "![i](http://evil.example/i.png) [x](http://evil.example/)"]


def assert_plain_and_pathless(body: str, home: str, quoted: str) -> None:
    """An error body (Markdown) that shows ``quoted`` as text: no link, image or HTML can
    form, and no server path is shown."""
    active = re.findall(r"(?<!\\)(?:\\\\)*([\[\]()!<>:])", body)
    assert not active, f"unescaped Markdown in the error: {active} in {body!r}"
    assert "](" not in body and "![" not in body, body
    assert quoted in displayed(body), (quoted, displayed(body))
    assert home not in displayed(body) and os.path.realpath(home) not in displayed(body), body
    assert not re.search(r"(^|[\s'\"(])/[\w.-]+/", displayed(body)), f"a server path is shown: {body!r}"


@pytest.mark.parametrize("line", EVIL_LINES, ids=["link-first", "image-first"])
def test_upload_error_quoting_the_data_is_plain_text_without_paths(app_home, line):
    at = open_page("pages/4_Data.py")
    at.file_uploader(key="upload").set_value(("evil.svm", b"1 1:1\n" + line.encode() + b"\n-1 2:1\n", "text/plain"))
    at.run()
    assert_clean(at)
    assert len(at.error) == 1, texts(at.error)
    body = at.error[0].proto.body
    assert "line 2" in displayed(body)
    assert_plain_and_pathless(body, app_home, line.split()[0])


@pytest.mark.parametrize("line", EVIL_LINES, ids=["link-first", "image-first"])
def test_server_file_error_quoting_the_data_is_plain_text_without_paths(app_home, line):
    os.makedirs(os.path.join(app_home, "datasets"))
    with open(os.path.join(app_home, "datasets", "evil.svm"), "wb") as f:
        f.write(b"1 1:1\n" + line.encode() + b"\n-1 2:1\n")
    at = open_page("pages/4_Data.py")
    at.text_input(key="server_path").set_value("evil.svm")  # a relative name of a file in datasets/
    at.button(key="use_path").click().run()
    assert_clean(at)
    assert len(at.error) == 1, texts(at.error)
    body = at.error[0].proto.body
    assert displayed(body).startswith("evil.svm, line 2: "), displayed(body)
    assert_plain_and_pathless(body, app_home, line.split()[0])


def test_good_upload_is_saved_and_offered_for_training(app_home):
    data = b"".join(b"1 1:0.5 3:1\n-1 2:0.25 4:2\n" for _ in range(20))
    at = open_page("pages/4_Data.py")
    at.file_uploader(key="upload").set_value(("good.svm", data, "text/plain"))
    at.run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    assert any("Saved as good-" in t for t in texts(at.success)), texts(at.success)
    saved = os.listdir(os.path.join(app_home, "uploads"))
    assert len(saved) == 1 and saved[0].startswith("good-") and saved[0].endswith(".svm")
    at.switch_page("app.py").run()
    assert_clean(at)
    assert saved[0] in at.selectbox(key="train_dataset").options


# ---------------------------------------------------------------- Train: launch

def test_invalid_combination_shows_one_error_next_to_the_field(app_home):
    at = open_page()
    at.selectbox(key="train_model").set_value("kernel-svm")
    at.selectbox(key="train_mode").set_value("stream")
    at.run()
    assert_clean(at)
    at.button(key="launch").click().run()
    assert_clean(at)
    # one error at the field, and the same reason under the Launch button (where the user looks)
    errors = list(at.error)
    assert len(errors) == 2, texts(errors)
    at_launch, at_field = errors
    assert at_launch.value == "**Not launched.** " + at_field.value, texts(errors)
    assert "kernel-svm" in at_field.value and "mode" in at_field.value, at_field.value
    side = sidebar_elements(at)
    mode = next(i for i, n in enumerate(side) if getattr(n, "key", None) == "train_mode")
    assert side[mode + 1] is at_field or getattr(side[mode + 1], "value", None) == at_field.value, \
        f"the error is not right below the mode field: {[getattr(n, 'key', None) or n.type for n in side]}"
    launch = next(i for i, n in enumerate(side) if getattr(n, "key", None) == "launch")
    assert getattr(side[launch + 1], "value", None) == at_launch.value, "the reason is not under the Launch button"
    assert not store_runs(app_home), "an invalid launch created a run"


def test_launch_button_starts_a_run(app_home):
    at = open_page()
    at.checkbox(key="train_features_on").check().run()
    at.number_input(key="train_features").set_value(SMALL["features"])
    at.number_input(key="train_rows").set_value(SMALL["rows"])
    at.number_input(key="train_epochs").set_value(SMALL["epochs"])
    at.run()
    assert_clean(at)
    assert not store_runs(app_home)
    at.button(key="launch").click().run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    runs = store_runs(app_home)
    assert len(runs) == 1, runs
    rid = runs[0].id
    assert {k: runs[0].config[k] for k in SMALL} == SMALL
    assert at.session_state["run_id"] == rid
    assert wait_run_finished(rid, app_home) == RunStatus.COMPLETED
    at.run()
    assert_clean(at)
    assert any(f"Run {rid} completed" in t for t in texts(at.success)), texts(at.success)
    assert memory_curves(chart(at, "train_chart")).get("total RSS", 0) > 5


def test_live_run_shows_progress_and_cancels(app_home, monkeypatch):
    monkeypatch.setenv("SVMCORE_FAULT", "sleep:60@train")  # inherited by the worker: a long run
    at = open_page()
    at.checkbox(key="train_features_on").check().run()
    at.number_input(key="train_features").set_value(SMALL["features"])
    at.number_input(key="train_rows").set_value(SMALL["rows"]).run()
    at.button(key="launch").click().run()
    assert_clean(at)
    rid = at.session_state["run_id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        run = get_active(app_home, rid)
        if run is not None and run.snapshot().phase == "train":
            break
        time.sleep(0.1)
    else:
        pytest.fail("the run never reached its train phase")
    at.run()
    assert_clean(at)
    assert at.get("progress"), "no progress bar while the run goes"
    at.button(key="train_cancel").click().run()
    assert_clean(at)
    assert wait_run_finished(rid, app_home, timeout=15) == RunStatus.CANCELLED
    at.run()
    assert_clean(at)
    assert any(f"Run {rid} cancelled" in t for t in texts(at.info)), texts(at.info)
    assert not has_key(at, "train_cancel")


# ---------------------------------------------------------------- regressions (bugs found and fixed)

def _copy_history(history: dict, home: str) -> None:
    """The shared history's store copied into ``home`` (for a test that adds runs to it:
    the shared one is only read)."""
    import shutil

    shutil.copytree(history["home"], home, dirs_exist_ok=True)


def test_launch_with_history_shows_the_new_run(app_home, history):
    _copy_history(history, app_home)
    first = max(history["sweep_runs"])  # the latest run of the history
    at = open_page()
    assert any(f"Run {first} completed" in t for t in texts(at.success))
    at.checkbox(key="train_features_on").check().run()
    at.number_input(key="train_features").set_value(SMALL["features"])
    at.number_input(key="train_rows").set_value(SMALL["rows"]).run()
    at.button(key="launch").click().run()
    assert_clean(at)
    new = max(r.id for r in store_runs(app_home))
    assert new != first
    wait_run_finished(new, app_home)
    at.run()
    assert at.session_state["run_id"] == new
    assert any(f"Run {new} completed" in t for t in texts(at.success)), texts(at.success)


def test_start_sweep_with_history_shows_the_new_sweep(app_home, history):
    _copy_history(history, app_home)
    old = history["sweep"]  # a finished sweep in the history
    at = open_page("pages/2_Sweep.py")
    assert at.selectbox(key="shown_sweep").value == old
    at.checkbox(key="sweep_features_on").check().run()
    at.number_input(key="sweep_features").set_value(SMALL["features"])
    at.number_input(key="sweep_rows").set_value(SMALL["rows"])
    at.number_input(key="sweep_epochs").set_value(1)
    at.multiselect(key="varied").set_value(["batch_size"]).run()
    at.text_input(key="grid_batch_size").set_value("512").run()
    at.button(key="start_sweep").click().run()
    assert_clean(at)
    s = Store(app_home)
    new = max(sw["id"] for sw in s.sweeps())
    s.close()
    try:
        assert new != old
        assert at.selectbox(key="shown_sweep").value == new, "the page still shows the previous sweep"
    finally:
        for r in store_runs(app_home):
            if not r.status.is_finished():
                wait_run_finished(r.id, app_home)


def test_sweep_on_an_unreachable_dask_scheduler_shows_one_error(app_home, monkeypatch):
    from svmcore.sweeps import dask_executor

    monkeypatch.setattr(dask_executor, "CONNECT_TIMEOUT_S", 1.0)
    at = open_page("pages/2_Sweep.py")
    assert at.text_input(key="scheduler").disabled  # only for the dask executor
    at.radio(key="executor").set_value("dask").run()
    at.text_input(key="scheduler").set_value("tcp://127.0.0.1:1").run()
    at.button(key="start_sweep").click().run()
    assert_clean(at)
    assert texts(at.error) == ["cannot reach the Dask scheduler at tcp://127.0.0.1:1: connection refused: "
                               "nothing listens on 127.0.0.1:1 (is a scheduler running there?)"], texts(at.error)
    assert not store_runs(app_home)


@pytest.mark.slow
def test_dask_sweep_shows_where_each_run_ran(app_home):
    import socket

    from distributed import LocalCluster

    from svmcore.app.lab import Lab

    with LocalCluster(n_workers=1, processes=True, threads_per_worker=1, resources={"svmcore_run": 1},
                      dashboard_address=None) as cluster:
        lab = Lab(app_home)
        sweep_id = lab.sweeps.start(dict(SMALL, epochs=1), {"batch_size": [256, 2048]}, executor="dask",
                                   scheduler=cluster.scheduler_address)
        assert lab.sweeps.active[sweep_id].wait(120)
    at = open_page("pages/2_Sweep.py")
    assert_clean(at)
    assert any(t.startswith("Ran on a Dask cluster: tcp://127.0.0.1:") for t in texts(at.caption)), texts(at.caption)
    assert list(at.dataframe[0].value["host"]) == [socket.gethostname()] * 2
    at.switch_page("pages/1_Compare.py").run()
    assert_clean(at)
    assert set(at.dataframe[0].value["host"]) == {socket.gethostname()}


def test_sweep_over_several_hosts_is_compared_per_host(app_home):
    s = Store(app_home)
    sweep_id = s.create_sweep({"base": {}, "grid": {"batch_size": [256, 2048]}, "executor": "dask",
                               "scheduler": "tcp://scheduler:8786"})
    for host, peak, acc in [("box-a", 150.0, 0.80), ("box-a", 200.0, 0.85), ("box-b", 120.0, 0.70)]:
        rid = s.create_run({"batch_size": 256}, status=RunStatus.QUEUED, sweep_id=sweep_id, label=f"{host} {acc}")
        s.complete_imported(rid, {"status": "completed", "host": {"host": host, "cpus": 8, "memory_bytes": 2**34},
                                  "summary": {"peak_rss_mb": peak, "accuracy": acc, "samples_per_s": 1e4}})
    s.close()
    at = open_page("pages/2_Sweep.py")
    assert_clean(at)
    assert list(at.selectbox(key="sweep_host").options) == ["box-a", "box-b"]
    assert set(at.dataframe[0].value["host"]) == {"box-a"}
    assert at.number_input(key=f"budget_{sweep_id}").value == 175  # the median peak of box-a's runs
    at.number_input(key=f"budget_{sweep_id}").set_value(300).run()
    assert any("(box-a 0.85)" in t for t in texts(at.success)), texts(at.success)
    at.selectbox(key="sweep_host").set_value("box-b").run()
    assert set(at.dataframe[0].value["host"]) == {"box-b"}
    assert any("(box-b 0.7)" in t for t in texts(at.success)), texts(at.success)


@pytest.mark.parametrize("name", ["a9a", "a9a.t"])
def test_libsvm_upload_without_an_extension_is_accepted_and_inspected(app_home, name):
    data = b"".join(b"+1 1:0.5 3:1\n-1 2:0.25 4:2\n" for _ in range(20))
    at = open_page("pages/4_Data.py")
    at.file_uploader(key="upload").set_value((name, data, "application/octet-stream")).run()
    assert_clean(at)
    assert not at.error, texts(at.error)
    saved = os.listdir(os.path.join(app_home, "uploads"))
    assert len(saved) == 1 and saved[0].startswith(name.replace(".", "_") + "-") and saved[0].endswith(".svm")
    assert any(f"Saved as {saved[0]}" in t for t in texts(at.success)), texts(at.success)
    assert at.metric[0].value == "40" and at.metric[4].value == "2"


def test_upload_is_inspected_right_away(app_home):
    data = b"".join(b"1 1:0.5 3:1\n-1 2:0.25 4:2\n" for _ in range(20))
    at = open_page("pages/4_Data.py")
    at.file_uploader(key="upload").set_value(("good.svm", data, "text/plain")).run()
    assert_clean(at)
    assert at.selectbox(key="inspect_choice").value.endswith(".svm")
    assert at.metric[0].value == "40"


@pytest.mark.slow
def test_launch_after_removing_the_cap_runs_or_explains(app_home):
    at = open_page()
    at.checkbox(key="train_features_on").check()
    at.checkbox(key="train_memory_cap_mb_on").check().run()
    at.number_input(key="train_features").set_value(SMALL["features"])
    at.number_input(key="train_rows").set_value(SMALL["rows"])
    at.number_input(key="train_epochs").set_value(1)
    at.number_input(key="train_memory_cap_mb").set_value(2000)
    at.selectbox(key="train_cap_kind").set_value("rlimit").run()
    at.button(key="launch").click().run()
    first = at.session_state["run_id"]
    wait_run_finished(first, app_home)
    at.checkbox(key="train_memory_cap_mb_on").uncheck().run()
    at.button(key="launch").click().run()
    assert_clean(at)
    launched = len(store_runs(app_home)) == 2
    try:
        assert launched or at.error, "Launch did nothing and showed no error"
    finally:
        for r in store_runs(app_home):
            if not r.status.is_finished():
                wait_run_finished(r.id, app_home)


def test_error_goes_away_when_the_field_is_fixed(app_home):
    at = open_page()
    at.selectbox(key="train_model").set_value("kernel-svm")
    at.selectbox(key="train_mode").set_value("stream").run()
    at.button(key="launch").click().run()
    assert len(at.error) == 2  # at the field and at the Launch button
    at.selectbox(key="train_mode").set_value("memory").run()
    assert_clean(at)
    assert not at.error, texts(at.error)


def test_a_refused_launch_offers_its_fix_at_the_launch_button(app_home):
    at = open_page()
    at.selectbox(key="train_model").set_value("kernel-svm")
    at.selectbox(key="train_mode").set_value("stream").run()
    at.button(key="launch").click().run()
    fix = at.button(key="apply_fix")
    assert fix.label == "Set mode to memory"
    fix.click().run()
    assert_clean(at)
    assert at.selectbox(key="train_mode").value == "memory" and not at.error, texts(at.error)


def test_a_warned_launch_still_runs_and_its_exact_peak_is_the_workers_not_the_dashboards(app_home, monkeypatch):
    """Two promises of one launch (same knobs, one real run): a run whose peak exceeds the memory
    available is warned of and still launched; and the exact peak shown is the worker's, not
    the dashboard's (here the test process, holding 700 MiB)."""
    from svmcore.engine import hostinfo

    monkeypatch.setattr(hostinfo, "available_memory_bytes", lambda: 5 * 2**20)
    ballast = b"\x01" * (700 * 2**20)  # the dashboard process (here: the test process) holds 700 MiB
    try:
        at = open_page()
        at.checkbox(key="train_features_on").check().run()
        at.number_input(key="train_features").set_value(SMALL["features"])
        at.number_input(key="train_rows").set_value(SMALL["rows"])
        at.number_input(key="train_epochs").set_value(1).run()
        assert_clean(at)
        warns = _launch_warnings(at)
        assert len(warns) == 1 and warns[0].startswith("Memory: this run needs at least"), ("warning", warns)
        assert "this machine has 5 MiB available now" in warns[0], ("warning", warns)
        at.button(key="launch").click().run()  # warned, not blocked
        assert_clean(at)
        runs = store_runs(app_home)
        assert len(runs) == 1, ("warned, not blocked", runs)
        rid = at.session_state["run_id"]
        assert rid == runs[0].id
        assert wait_run_finished(rid, app_home) == RunStatus.COMPLETED, "warned, not blocked"
        at.run()
        assert_clean(at)
    finally:
        del ballast
    metrics = {m.label: m.value for m in at.metric}
    exact = float(metrics["exact peak"].split()[0].replace(",", ""))
    sampled = float(metrics["sampled max"].split()[0].replace(",", ""))
    phases = [p.peak_rss_mb for p in store_runs(app_home)[0].summary.phases if p.peak_rss_mb]
    assert exact >= sampled - 1, ("exact peak", metrics)
    assert exact < 500 and abs(exact - max(phases)) < 50, ("exact peak: the worker's", metrics, phases)


def test_train_offers_calibration_then_shows_the_prediction_and_the_comparison(app_home):
    from svmcore.predict import calibration as calib

    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT).run()
    assert not at.exception
    assert any(b.label == "Calibrate" for b in at.button)
    assert not any("Predicted exact peak" in i.value for i in at.info)
    # a calibration for this machine (the coefficients of a real fit would do the same)
    cal = calib.Calibration({"linear-svm+base": 124.0},
                               {"load": {"load_data_float64": 1.0, "test": 2.0, "const_memory": 10.0},
                                "train": {"data_float64": 1.5, "model_linear": 1.0, "test": 2.0}},
                               calib.fingerprint(), time.time(), 1, {})
    with open(calib.calibration_path(app_home), "w") as f:
        json.dump(cal.to_dict(), f)
    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT).run()
    assert not any(b.label == "Calibrate" for b in at.button)
    info = next(i.value for i in at.info if "Predicted exact peak" in i.value)
    assert "floor 124" in info and "load phase" in info
    at.number_input(key="fit_budget").set_value(150).run()
    at.button(key="rec_go").click().run()
    assert not at.exception
    advice = next(s.value for s in list(at.success) + list(at.warning) if "best for accuracy" in s.value)
    assert "mode = " in advice, advice  # under this budget the data cannot stay in memory
    assert "95% confidence" in advice, advice  # the pick says whether it fits with the model's margin
    at.button(key="rec_apply").click().run()
    assert at.selectbox(key="train_mode").value != "memory"
    at.selectbox(key="train_mode").set_value("memory").run()
    at.checkbox(key="train_features_on").check().run()
    at.number_input(key="train_features").set_value(SMALL["features"])
    at.number_input(key="train_rows").set_value(SMALL["rows"])
    at.number_input(key="train_epochs").set_value(1)
    at.run()
    at.button(key="launch").click().run()
    run_id = at.session_state.run_id
    run = get_active(app_home, run_id)
    if run is not None:
        run.wait(60)
    at = AppTest.from_file(ENTRY, default_timeout=TIMEOUT).run()
    assert any("Predicted before launch" in c.value for c in at.caption), [c.value for c in at.caption]
    rec = Store(app_home).get_run(run_id)
    assert rec.summary.prediction.predicted_peak_mb > 124


# ---------------------------------------------------------------- Train: warnings before launch

def _launch_warnings(at: AppTest) -> list[str]:
    return [t for t in texts(at.warning) if t.startswith(("Memory: ", "Time: "))]


def test_train_warns_before_launch_without_calibration(app_home):
    """Issue #10: an MLP on 2^20 columns took 3.7 GiB and ten minutes with no word."""
    at = open_page()
    assert_clean(at)
    assert _launch_warnings(at) == []  # the default linear SVM: nothing to warn about
    at.selectbox(key="train_model").set_value("mlp").run()
    assert_clean(at)
    warns = _launch_warnings(at)
    assert len(warns) == 2 and warns[1].startswith("Time: training alone is forecast to take about "), warns
    assert "minutes" in warns[1] and "rough" in warns[1] and "a reference machine, not this one" in warns[1]
    # its model alone: a word whatever memory is free (issue 40)
    assert warns[0].startswith("Memory: the model and its optimiser state alone are forecast to hold 3,"), warns
    at.checkbox(key="train_memory_cap_mb_on").check().run()
    at.number_input(key="train_memory_cap_mb").set_value(300).run()
    assert_clean(at)
    memory = [w for w in _launch_warnings(at) if w.startswith("Memory: ")]
    assert len(memory) == 1, _launch_warnings(at)
    assert "needs at least 3," in memory[0] and "a lower bound" in memory[0], memory[0]
    assert "most of it model" in memory[0] and "its memory cap is 300 MiB" in memory[0]
    assert not store_runs(app_home)  # a warning is not a launch


def test_train_warns_with_the_calibrated_forecast_and_shows_the_time(app_home):
    from svmcore.predict import calibration as calib

    cal = calib.Calibration({"linear-svm+base": 124.0, "mlp+base": 125.0},
                               {"train": {"model_mlp": 1.0, "const_memory": 10.0}},
                               calib.fingerprint(), time.time(), 1, {},
                               {"const": 0.05, "sample_mlp": 2e-9, "step_mlp": 2e-8, "fresh_mlp": 1e-8})
    with open(calib.calibration_path(app_home), "w") as f:
        json.dump(cal.to_dict(), f)
    at = open_page()
    at.selectbox(key="train_model").set_value("mlp").run()
    at.checkbox(key="train_memory_cap_mb_on").check().run()
    at.number_input(key="train_memory_cap_mb").set_value(1000).run()
    assert_clean(at)
    warns = _launch_warnings(at)
    assert any(w.startswith("Memory: this run is forecast to peak at 3,") and "its memory cap is 1,000 MiB" in w
               for w in warns), warns
    assert any(w.startswith("Time: ") and "fitted on this machine's calibration runs" in w for w in warns), warns
    info = next(i.value for i in at.info if "Predicted exact peak" in i.value)
    assert "Training: **about " in info and "of CPU time**" in info and "rough" in info
