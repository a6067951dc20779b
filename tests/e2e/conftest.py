"""Fixtures for the real-browser suite: Streamlit servers on free ports with their
own SVMCORE_HOME, Debian's chromium driven by Playwright, screenshots.

- ``history_server`` (session): a home prepared with the svmcore Lab API *before*
  the server starts (two finished runs whose knobs differ), for pages that only need
  existing runs.
- ``fresh_server`` (per test): a factory for a server with an empty home, optionally
  with extra environment (e.g. SVMCORE_FAULT to make runs long). Train-page launch
  tests use it so that each launch is the first run of its server.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.helpers import make_history, shared_history  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
ARTIFACTS = os.path.join(ROOT, "test-artifacts")
SCREENSHOTS = os.path.join(ARTIFACTS, "screenshots")
SMALL = {"rows": 20_000, "features": 65_536, "epochs": 1}
STARTUP_S = 60


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One ``streamlit run app.py`` child process with its own data home."""

    def __init__(self, home: str, log_path: str, env: dict | None = None):
        self.home = home
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        full_env = dict(os.environ)
        full_env.pop("SVMCORE_FAULT", None)
        full_env.update({"SVMCORE_HOME": home, "PYTHONPATH": ROOT, "PYTHONUNBUFFERED": "1",
                         "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"})
        full_env.update(env or {})
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(self.port),
             "--server.headless", "true", "--server.address", "127.0.0.1"],
            cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        self._wait_healthy()

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200 and r.read().strip() == b"ok":
                        return
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"streamlit was not healthy within {STARTUP_S} s:\n{self.log()[-3000:]}")

    def log(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def runs(self):
        """The run records of this server's home (read through the store, read-only)."""
        from svmcore.store.sqlite import Store

        s = Store(self.home)
        try:
            return s.list_runs()
        finally:
            s.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        self._reap_workers()

    def _reap_workers(self) -> None:
        """Workers run in their own sessions and outlive a stopped server: kill the ones
        this server started that are still alive (checked by pid *and* start time)."""
        from svmcore.engine import procfs
        from svmcore.spec.status import RunStatus

        try:
            live = [r for r in self.runs() if r.status in (RunStatus.RUNNING, RunStatus.QUEUED)]
        except Exception:
            return
        for rec in live:
            if rec.worker_pid and procfs.is_same_process(rec.worker_pid, rec.worker_ctime):
                try:
                    os.kill(rec.worker_pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


HISTORY_SCRIPT = r"""
import json, sys, time
from svmcore.app.lab import Lab

home, small = sys.argv[1], json.loads(sys.argv[2])
lab = Lab(home)
sweep = lab.sweeps.start(dict(small), {"batch_size": [256, 2048]})
runs = [lab.runs.launch(dict(small, batch_size=256)), lab.runs.launch(dict(small, batch_size=2048, epochs=2))]
ids = sorted(lab.sweeps.status(sweep)["statuses"]) + runs
deadline = time.monotonic() + 300  # a loaded machine (load 30 on 2 cores) took over 120 s
# the store, not the view: a view shows a run's outcome just before the store records it, and this
# process exits next (a run left 'running' in the store was seen under load)
while time.monotonic() < deadline and any(not lab.store.get_run(i).status.is_finished() for i in ids):
    time.sleep(0.1)
print(json.dumps({"runs": runs, "sweep": sweep, "sweep_runs": ids[:2],
                  "statuses": [lab.runs.view(i).status.value for i in ids]}))
"""


def _prepare_history(home: str) -> dict:
    """With the Lab API, in a small separate process (so the test process has no part in
    the runs): a finished two-point sweep, then two finished single runs that differ in
    batch_size and epochs (the queue runs in order, so these are the latest two)."""
    made = make_history(HISTORY_SCRIPT, home, SMALL)
    assert made.pop("statuses") == ["completed"] * 4, made
    return made


@pytest.fixture(scope="session")
def artifacts_dir():
    os.makedirs(SCREENSHOTS, exist_ok=True)
    for name in os.listdir(SCREENSHOTS):  # failure shots of an earlier session would mislead
        if name.startswith("FAILED-"):
            os.remove(os.path.join(SCREENSHOTS, name))
    return ARTIFACTS


@pytest.fixture(scope="session")
def history_server(tmp_path_factory, artifacts_dir):
    # made once for both test processes, each its own copy (see shared_history)
    prepared, home = shared_history(tmp_path_factory, "e2e-history", _prepare_history)
    server = Server(home, os.path.join(artifacts_dir, "streamlit-history.log"))
    server.prepared = prepared
    yield server
    server.stop()


@pytest.fixture
def fresh_server(tmp_path, artifacts_dir, request):
    """Factory: ``fresh_server(env={...})`` -> a Server with an empty home."""
    servers = []

    def make(env: dict | None = None) -> Server:
        home = str(tmp_path / f"home{len(servers)}")
        os.makedirs(home)
        log = os.path.join(artifacts_dir, f"streamlit-{request.node.name}-{len(servers)}.log")
        server = Server(home, log, env)
        servers.append(server)
        return server

    make.servers = servers
    yield make
    for s in servers:
        s.stop()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
    yield b
    b.close()
    pw.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, f"rep_{rep.when}", rep)
    if rep.failed and rep.when == "call":
        # the app's own traceback is in its server's log, which CI does not keep: put it in the report
        for server in _servers_of(item):
            rep.sections.append((f"streamlit log {os.path.basename(server.log_path)} (tail)",
                                 server.log()[-LOG_TAIL:]))


LOG_TAIL = 6000


def _servers_of(item) -> list:
    servers = []
    for value in getattr(item, "funcargs", {}).values():
        if isinstance(value, Server):
            servers.append(value)
        servers.extend(getattr(value, "servers", []))
    return servers


@pytest.fixture
def page(browser, request, artifacts_dir):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    # assertions wait as long as actions: in the full run (two test processes, real runs beside the
    # browser) a Compare table or a Sweep page took over 5 s to draw, and the tests that passed alone failed
    from playwright.sync_api import expect

    expect.set_options(timeout=30_000)
    pg = context.new_page()
    yield pg
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed:
        try:
            pg.screenshot(path=os.path.join(SCREENSHOTS, f"FAILED-{request.node.name}.png"), full_page=True)
        except Exception as e:  # the test's own failure is the one to report; say why there is no shot
            logging.getLogger(__name__).warning("no failure screenshot of %s: %s", request.node.name, e)
    context.close()
