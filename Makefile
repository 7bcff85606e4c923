# The kernel lab's commands. `make` alone lists them.
# Every target installs what it needs into .venv on first use (from requirements.txt).
# To use another Python environment (conda, or a machine's own torch), pass PY: `make test PY=python3`.

.DEFAULT_GOAL := help
SHELL := /bin/bash
VENV := .venv
PY ?= $(VENV)/bin/python
export PYTHONPATH := $(CURDIR)$(if $(PYTHONPATH),:$(PYTHONPATH))

ifeq ($(PY),$(VENV)/bin/python)
ENV_READY := $(VENV)/.installed
else
ENV_READY :=
endif

##@ Main

# Jupyter refuses to start as root without --allow-root; containers and rented GPU machines often run as root
LAB_AS_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
# .jupyter/labconfig: the kit's defaults for JupyterLab's settings (no "get notified about Jupyter news?" pop-up
# over the notebooks' outputs, no update check); a student's own settings still win
LAB_CONFIG := JUPYTER_CONFIG_PATH="$(CURDIR)/.jupyter$(if $(JUPYTER_CONFIG_PATH),:$(JUPYTER_CONFIG_PATH))"

lab: $(ENV_READY) ## Start JupyterLab on the kit (notebooks/ to learn, kernels/ and exercises/ to edit); LAB_ARGS="--no-browser" etc.
	$(LAB_CONFIG) $(PY) -m jupyter lab --ServerApp.root_dir="$(CURDIR)" $(LAB_AS_ROOT) $(LAB_ARGS) notebooks/01_add2.ipynb

# pytest-xdist runs the tests on every core, each group of tests on one worker (tests/conftest.py says which go
# together); where there is a GPU, the tests that time it (marked exclusive_gpu) run after the others, alone.
# TEST_WORKERS=0 runs everything in one process (also where xdist is not installed); auto is one worker a core, at
# most 16 (each holds torch, and on a GPU machine a CUDA context).
TEST_WORKERS ?= auto
# The kit's own modules byte-compiled first: where PYTHONDONTWRITEBYTECODE is set (the CI machine sets it) Python
# writes no bytecode as it imports, and every Python process the tests start imports loader, building/ and kit/
# (~0.2 s of CPU each to compile from source; .venv's modules are byte-compiled as they are installed)
test: $(ENV_READY) ## Run every test on every core (CUDA tests run where there is a GPU, and say why they skip where not)
	@$(PY) -m compileall -q -j 0 loader.py building kit hub bench > /dev/null || true
	@if [ "$(TEST_WORKERS)" = 0 ] || ! $(PY) -c "import xdist" 2> /dev/null; then \
		$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; r2=0; \
	elif $(PY) -c "import sys, torch; sys.exit(not torch.cuda.is_available())" 2> /dev/null; then \
		$(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses 16 --dist loadgroup -m "not exclusive_gpu" $(PYTEST_ARGS); rc=$$?; \
		$(PY) -m pytest -m exclusive_gpu $(PYTEST_ARGS); r2=$$?; \
	else \
		$(PY) -m pytest -n $(TEST_WORKERS) --maxprocesses 16 --dist loadgroup $(PYTEST_ARGS); rc=$$?; r2=0; \
	fi; \
	[ $$rc -eq 5 ] && echo "pytest collected no tests"; \
	[ $$rc -eq 5 ] && rc=0; [ $$r2 -eq 5 ] && r2=0; [ $$rc -eq 0 ] && rc=$$r2; exit $$rc

##@ A class on one server (README "Run a class")

hub: $(ENV_READY) ## Start JupyterHub for a class: each student their own JupyterLab, kit copy and build folder; HUB_ARGS="--port 8000"
	$(PY) -m jupyterhub -f hub/jupyterhub_config.py $(HUB_ARGS)

grade-class: $(ENV_READY) ## Collect every student's work from the hub's homes, grade it (several at once, time limits per exercise and check) into ~/.labkit-class (grades.json, grades.csv) and each student's ~/grades/report.md; EX=, CLASS_ARGS="--homes /home --deadline '2026-12-01 18:00' -j 4"
	$(PY) -m hub.collect $(EX) $(CLASS_ARGS)

##@ Code style (ruff.toml, .clang-format)

# The C++ and CUDA sources git knows of, or would add (untracked, not ignored), none written out; outside a git
# checkout (a student's copy on the hub) the folders that hold C++
CXX_GLOBS := '*.cu' '*.cuh' '*.cpp' '*.h' '*.hpp'
CXX_FILES = $(or $(shell git ls-files --cached --others --exclude-standard -- $(CXX_GLOBS) 2>/dev/null),\
  $(shell find kernels exercises solutions aot cmake -type f \( $(patsubst %,-name % -o,$(CXX_GLOBS)) -false \) 2>/dev/null))
# the clang-format of the clang-format wheel (requirements.txt), which is the version the style was tuned with
CLANG_FORMAT = $(PY) -c 'from clang_format import clang_format; clang_format()'

lint: $(ENV_READY) ## Check the style: ruff (lint, format) on Python and notebooks, clang-format on C++/CUDA
	@rc=0; \
	echo "ruff check"; $(PY) -m ruff check . || rc=1; \
	echo "ruff format --check"; $(PY) -m ruff format --check . || rc=1; \
	echo "clang-format --dry-run"; $(CLANG_FORMAT) --dry-run -Werror $(CXX_FILES) && echo "$(words $(CXX_FILES)) files fine" || rc=1; \
	if [ $$rc -ne 0 ]; then echo "fix: make format (formats, and applies ruff's safe fixes); what it leaves, fix by hand"; fi; \
	exit $$rc

format: $(ENV_READY) ## Rewrite the code in the house style: ruff's safe fixes, ruff format, clang-format -i
	$(PY) -m ruff check --fix-only .
	$(PY) -m ruff format .
	@echo "clang-format -i ($(words $(CXX_FILES)) C++ and CUDA files)"; $(CLANG_FORMAT) -i $(CXX_FILES)

##@ More

doctor: $(ENV_READY) ## Check torch, CUDA toolkit, compiler, GPUs and the build cache, with a fix for each problem
	$(PY) -m loader doctor

warm: $(ENV_READY) ## Compile every op and exercise once into the compiler cache LABKIT_CACHE_DIR names (a class's first builds then come from it)
	$(PY) -m kit.warm

# The grader's report is the last thing `make check` prints, so its status stays 0: make follows a failed recipe
# with its own "make: *** [Makefile:N: check] Error 1" line (or "(ignored)"), whatever the recipe does. Scripts that
# need a status run `python -m kit.grade` itself: exit status 1 while an exercise fails.
check: $(ENV_READY) ## Grade every exercise (EX="ex1_add2_tail ..." for some; SOLUTIONS=1 grades solutions/)
	@$(PY) -m kit.grade $(EX) $(if $(SOLUTIONS),--solutions) $(if $(JSON),--json $(JSON)) || true

bench: $(ENV_READY) ## Benchmark every op against PyTorch and a copy (GPU); writes results/ with device and date
	$(PY) bench/run.py $(BENCH_ARGS)

aot: $(ENV_READY) ## Build the ops ahead of time and pip-install them into this environment (import labkit_aot)
	$(PY) -m pip install --no-build-isolation --no-deps ./aot

cmake: $(ENV_READY) ## Build the ops with CMake against libtorch, one liblabkit_<op>.so each, into .build/cmake
	$(PY) -m building.builds cmake

strip: $(ENV_READY) ## Strip outputs from the notebooks before committing them
	$(PY) -m kit.nbstrip notebooks/*.ipynb

clean: ## Remove the build cache (.build/); the next call of each op rebuilds it
	rm -rf .build

distclean: clean ## Also remove .venv
	rm -rf $(VENV)

# target names in colour on a terminal only: piped or saved, the help is plain text
help: ## Show this help
	@if [ -t 1 ]; then on=$$'\033[36m'; off=$$'\033[0m'; fi; \
	awk -v on="$$on" -v off="$$off" 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} \
	  /^[a-zA-Z_-]+:.*?##/ { printf "  %s%-12s%s %s\n", on, $$1, off, $$2 } \
	  /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

# building/install.py installs with uv (wheels unpacked and byte-compiled in parallel: half pip's time for a fresh
# .venv) where this machine's pip settings carry over to it, else with pip; LABKIT_INSTALLER=pip always uses pip.
# Either way every module is byte-compiled as it is installed (building/install.py says why)
$(VENV)/.installed: requirements.txt
	test -d $(VENV) || python3 -m venv $(VENV)
	$(VENV)/bin/python -m building.install requirements.txt
	touch $@

.PHONY: lab test hub grade-class check doctor warm bench aot cmake strip lint format clean distclean help
