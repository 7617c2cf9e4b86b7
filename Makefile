# chunkbench: `make demo`, `make test`, `make test-fast`, `make ui`, `make bench`, `make tools`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export CHUNKBENCH_HOME ?= $(CURDIR)/.chunkbench
# Python keeps its compiled modules (__pycache__) here even where the machine sets PYTHONDONTWRITEBYTECODE: with it
# set, every process compiles chunkbench's own modules again (about 0.6 s of CPU each), and the tests, the UI and a
# run start many processes (Dagster's run and code-server processes, the commands)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install demo lint test test-fast tools ui cluster bench clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

# the run, then what the README and docs/results.md say of it (the excerpt, the pick, the report's picture, the
# demo's time) rewritten from it: scripts/readme_excerpt.py --refresh alone does that part again from an existing run
demo: install
	$(BIN)/chunkbench run
	$(BIN)/python scripts/readme_excerpt.py --refresh

# the linter (pyflakes, pycodestyle, bugbear), the formatter's check (ruff format: `ruff format .` rewrites the
# code as it wants it) and the type checker, configured in pyproject.toml ([tool.ruff], [tool.mypy]); make test
# runs them before the suite: a finding fails it in seconds instead of minutes
lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# the whole suite on TEST_WORKERS processes; the tests that share one server (dagster dev, PostgreSQL,
# the llama.cpp server) run on one worker (--dist loadgroup), each worker has its own CHUNKBENCH_HOME.
# Three on a 2-core machine: a worker waiting for a server, a daemon or a subprocess leaves its core to the
# other two (measured on an idle 2-core machine: 13 min with three, 15 to 17 min with two)
TEST_WORKERS ?= 3
# eatmydata (Debian package), when installed, turns the tests' fsync calls into no-ops: every Dagster event, DuckDB
# and Parquet write waits for the disk otherwise, and no test can tell (nothing here survives a power cut it checks)
NO_FSYNC ?= $(shell command -v eatmydata 2>/dev/null)
# a passing run records its time and test count for the docs (scripts/record_timings.py); each test's worker, start,
# end and CPU time go to TIMELINE, which scripts/test_timeline.py reads (where the wall time went, worker by worker)
# (the tests folder named: xdist workers read the option only from a conftest of the paths they are given)
TIMELINE ?= test-artifacts/timeline.jsonl
RECORD_TIME = $(BIN)/python scripts/record_timings.py command
test: install lint
	$(RECORD_TIME) make_test -- $(NO_FSYNC) $(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder --timeline $(TIMELINE) tests

# the quick loop: no end-to-end graph runs, no browser, no external tools or server processes, nothing slow
test-fast: install
	$(RECORD_TIME) make_test_fast -- $(NO_FSYNC) $(BIN)/python -m pytest -q -ra -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -m "not slow and not e2e and not browser and not tools"

# the optional tools some tests need (LibreOffice, Chromium, PostgreSQL, a local LLM server);
# without them those tests skip and `make test` lists each skip with its reason
tools: install
	scripts/install-test-tools.sh $(VENV)

# the Dagster UI (dg dev) on 127.0.0.1:UI_PORT and the HTML reports on REPORTS_PORT (default UI_PORT + 1);
# Ctrl-C stops both
UI_PORT ?= 3000
REPORTS_PORT ?=
ui: install
	$(BIN)/chunkbench ui --port $(UI_PORT) $(if $(REPORTS_PORT),--reports-port $(REPORTS_PORT))

# the distributed profile on this machine (deploy/README.md): Redis, PostgreSQL, WORKERS Celery workers (each with
# its own CHUNKBENCH_HOME), the Dagster daemon and the UI on 127.0.0.1:UI_PORT; Ctrl-C stops them all
WORKERS ?= 2
cluster: install
	$(BIN)/python -m pip install -q -e '.[test,distributed]'
	$(BIN)/python -m chunkbench_pipelines.cluster --workers $(WORKERS) --port $(UI_PORT)

bench: install
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(CHUNKBENCH_HOME)
