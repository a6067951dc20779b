# Two entry points (see README): `make run` and `make test`. Both install what they need.
# `make test-slow` runs the tests `make test` leaves out; CI (.ci/run) runs both.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
# pytest processes of `make test`, a file to each (two cores: two)
TEST_PROCS ?= 2

.PHONY: run test test-slow bench deps dev-deps browser clean native pyc

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.deps: requirements.txt | $(BIN)/python
	$(BIN)/pip install -q -r requirements.txt
	touch $@

# The native C library (parser, writer, SGD and FTRL solvers): built by gcc into svmcore/data/native/build/
# (git-ignored; rebuilt when a source changes). Also built on demand by the first process that needs it.
native: deps
	$(BIN)/python -m svmcore.data.native

# Our own modules' bytecode, compiled once: where PYTHONDONTWRITEBYTECODE is set (it is on these machines),
# every process would compile them from source again (~0.35 CPU-s for each CLI call, server and test process).
pyc: deps
	$(BIN)/python -m compileall -q -j 0 svmcore ui pages tests app.py >/dev/null

$(VENV)/.dev-deps: requirements-dev.txt $(VENV)/.deps
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

deps: $(VENV)/.deps
dev-deps: $(VENV)/.dev-deps

# Debian's chromium drives the end-to-end tests (a Playwright browser download is not possible here).
browser:
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

run: deps native pyc
	$(BIN)/streamlit run app.py --server.port $(PORT)

# The default run: every test but the slow ones (5 s or more each in a full run: real runs at scale, the
# forecast's calibration, Dask clusters) and the browser's. Under 8 minutes from a clean clone.
test: dev-deps native pyc
	$(BIN)/python -m pytest -n $(TEST_PROCS) --dist loadfile --no-loadscope-reorder -m "not slow and not e2e"

test-slow: dev-deps browser native pyc
	$(BIN)/python -m pytest -n $(TEST_PROCS) --dist loadfile --no-loadscope-reorder -m "slow or e2e"

# Vowpal Wabbit is optional (a peer in the benchmark only); bench/compare.py skips it with a note if absent
bench: dev-deps native
	$(BIN)/pip install -q -r requirements-bench.txt || echo "vowpalwabbit not installed: skipped in the benchmark"
	$(BIN)/python bench/compare.py

clean:
	rm -rf $(VENV) .svmcore .pytest_cache test-artifacts svmcore/data/native/build
