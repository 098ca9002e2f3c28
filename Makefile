# Every target works on a fresh machine with nothing but Python: it creates .venv and installs
# the project into it first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
MAST := $(VENV)/bin/mast

.PHONY: demo test test-llm bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(MAST) --db mast.db annotate trajectories/

test: $(VENV)/.installed-dev
	$(PY) -m pytest -q -m "not llm"

test-llm: $(VENV)/.installed-dev
	$(PY) -m pytest -q -m llm tests/llm

bench: $(VENV)/.installed-dev
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache mast.db mast.db-wal mast.db-shm
