# The book's two commands: `make book` builds the site, `make test` runs every test.
# Each bootstraps its own virtual environment (.venv) from requirements.txt.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
JB_FLAGS := -W -n --keep-going
# Chapters run side by side, one per core, each kernel on one thread (_ext/executions.py).
JOBS ?= $(shell getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
EXECUTE := $(BIN)/python _ext/executions.py --jobs $(JOBS)
PIP := $(BIN)/python -m pip -q --disable-pip-version-check
# This machine's pip configuration names local indexes that may be absent: drop those warnings only.
QUIET_PIP := { grep -v "^WARNING: Location" || true; }

.PHONY: book course test test-kernels coverage unit notebooks site-quick site-checks chapter paper-scale benchmarks check-mode clean

# Refuse a bad ICLLIB_MODE before doing anything else.
check-mode:
	@case "$${ICLLIB_MODE:-default}" in quick|default|full) ;; \
	  *) echo "ICLLIB_MODE='$$ICLLIB_MODE' is not a run mode; allowed values: quick, default, full" >&2; exit 2;; esac
	@case "$${ICLLIB_DEVICE:-cpu}" in cpu|auto|cuda|cuda:[0-9]|cuda:[0-9][0-9]) ;; \
	  *) echo "ICLLIB_DEVICE='$$ICLLIB_DEVICE' is not a device; allowed values: cpu, cuda, cuda:N, auto" >&2; exit 2;; esac

# Only hash-checked packages: every one pinned in requirements.lock with the SHA-256 of each file pip may pick
# (`make lock` writes it from requirements.txt), installed as listed (--no-deps: nothing unlisted comes in). A local
# wheel the lock lists (this machine's CPU-only torch) goes first, by name, since pip would rank the index's files
# above it; torch's CUDA runtime (requirements-cuda.lock) only where the torch installed needs it (PyPI's Linux
# wheel); icllib itself from this folder, built with the locked setuptools (no build isolation: no unhashed download).
$(VENV)/.installed: requirements.txt requirements.lock requirements-cuda.lock pyproject.toml
	$(PYTHON) tools/lock.py check
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/lock.py local-wheels > $(VENV)/local-wheels.txt
	if [ -s $(VENV)/local-wheels.txt ]; then \
	  $(PIP) install --require-hashes --no-deps -r $(VENV)/local-wheels.txt 2>&1 | $(QUIET_PIP); fi
	$(PIP) install --require-hashes --no-deps -r requirements.lock 2>&1 | $(QUIET_PIP)
	if $(BIN)/python tools/lock.py cuda-needed; then \
	  $(PIP) install --require-hashes --no-deps -r requirements-cuda.lock 2>&1 | $(QUIET_PIP); fi
	$(PIP) install --no-deps --no-build-isolation -e . 2>&1 | $(QUIET_PIP)
	$(BIN)/python -m pip check 2>&1 | $(QUIET_PIP)
	$(BIN)/python -c "import icllib, torch, jupyter_book"
	touch $@

# requirements.lock and requirements-cuda.lock afresh from requirements.txt, for every platform, with uv (installed
# under _build/lock-tools/): run it after editing a pin, and commit the three files together.
.PHONY: lock
lock:
	test -x _build/lock-tools/bin/python || $(PYTHON) -m venv _build/lock-tools
	_build/lock-tools/bin/python -m pip -q --disable-pip-version-check install uv==0.13.9 2>&1 | $(QUIET_PIP)
	$(PYTHON) tools/lock.py write --uv _build/lock-tools/bin/uv

# The website, in `default` mode unless ICLLIB_MODE says otherwise. The chapters whose code, icllib modules,
# registry or pins changed since their stored execution run first, side by side; the pages are then built
# afresh from the stored executions (a prose edit re-executes nothing). Last, the course pack under
# _build/html/course/ (_ext/course.py: the student edition's pages, both editions' PDFs and notebooks), which
# the pages link (ICLLIB_COURSE_PACK=1), so that no link of the published site dangles. The pack's PDFs are printed
# by Chromium, looked for before anything runs; `make book COURSE_PACK=0` builds the site without the pack (and
# without links to it).
COURSE_PACK ?= 1
.PHONY: check-chromium
check-chromium:
	@if [ "$(COURSE_PACK)" = 1 ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null \
	  && ! command -v google-chrome >/dev/null; then \
	  echo "make book: the course pack's PDFs are printed by Chromium, and none is installed. Install it" \
	    "(Debian/Ubuntu: apt-get install chromium), or build the site without the pack: make book COURSE_PACK=0" >&2; \
	  exit 2; fi
	@case "$(COURSE_PACK)" in 0|1) ;; *) echo "COURSE_PACK='$(COURSE_PACK)' must be 1 or 0" >&2; exit 2;; esac

# The pages' mathematics is typeset when the site is built, by MathJax under Node.js (_ext/math_typesetting.py).
.PHONY: check-node
check-node:
	@command -v node >/dev/null || command -v nodejs >/dev/null || { echo "make: the site's mathematics is typeset" \
	  "at build time by Node.js, and none is installed (Debian/Ubuntu: apt-get install nodejs)" >&2; exit 2; }

book: check-mode check-chromium check-node $(VENV)/.installed
	rm -rf _build/html _build/.doctrees _build/jupyter_execute _build/claims _build/course
	ICLLIB_MODE=$${ICLLIB_MODE:-default} $(EXECUTE)
	ICLLIB_MODE=$${ICLLIB_MODE:-default} ICLLIB_COURSE_PACK=$(COURSE_PACK) $(BIN)/jupyter-book build . $(JB_FLAGS)
	if [ "$(COURSE_PACK)" = 1 ]; then ICLLIB_MODE=$${ICLLIB_MODE:-default} $(BIN)/python _ext/course.py --site _build/html; fi

# The course pack's two editions (built by `make book`) and their checks: no solution in any student page, PDF
# or notebook, every solution in the instructor's, every PDF page at least 40 % full but a chapter's last.
course: book
	ICLLIB_COURSE_SITE=_build/html $(BIN)/pytest tests/test_course.py

# Unit tests and every chapter notebook in `quick` mode, side by side (a notebook's cells stay on one worker),
# the ledger's coverage of the papers (every numbered result has a row, every erratum quotes its paper
# verbatim), then a quick build of the site from the notebook tests' stored executions, and its checks.
test: check-mode $(VENV)/.installed
	ICLLIB_MODE=$${ICLLIB_MODE:-quick} $(BIN)/pytest -n $(JOBS) --dist loadfile --durations=12 tests notebooks
	$(BIN)/python -m icllib.coverage
	$(MAKE) site-quick
	$(BIN)/pytest site_tests --site=_build/quick/_build/html --layouts=pairs --durations=8

# The notebook tests again on another CPU's kernels (CI's second leg): PyTorch, NumPy, MKL and OpenBLAS set as
# a CPU with only AVX2 (KERNELS=avx2) or no SIMD (KERNELS=default) would run them; every check must pass there
# with its stated tolerance (benchmarks/capabilities.py; its report compares each check's margin).
KERNELS ?= default
test-kernels: check-mode $(VENV)/.installed
	$(BIN)/python -m benchmarks.capabilities test $(KERNELS) --jobs $(JOBS)

site-quick: check-mode check-node $(VENV)/.installed
	rm -rf _build/quick
	ICLLIB_MODE=$${ICLLIB_MODE:-quick} $(EXECUTE)
	ICLLIB_MODE=$${ICLLIB_MODE:-quick} $(BIN)/jupyter-book build . --path-output _build/quick $(JB_FLAGS)

# The checks on the published site (run by CI after `make book`).
site-checks: $(VENV)/.installed
	$(BIN)/pytest site_tests --site=_build/html

# Build one chapter with the intro, the ledger and the references: `make chapter CHAPTER=balance` (a chapter read
# in parts comes with all its pages: tools/chapter_toc.py).
# Zero warnings, except the intro's links to the chapters left out of this partial build.
# A missing or unknown CHAPTER stops in one line, before the environment is built.
.PHONY: check-chapter
check-chapter:
	@test -n "$(CHAPTER)" || { echo "usage: make chapter CHAPTER=<notebook name>" >&2; exit 2; }
	@test -f "notebooks/$(CHAPTER).py" || { echo "make chapter: no chapter '$(CHAPTER)' (notebooks/$(CHAPTER).py);" \
	  "chapters: $$(cd notebooks && ls *.py | sed 's/\.py$$//' | tr '\n' ' ')" >&2; exit 2; }

chapter: check-mode check-chapter check-node $(VENV)/.installed
	mkdir -p _build/chapter-$(CHAPTER)
	$(BIN)/python tools/chapter_toc.py $(CHAPTER) _build/chapter-$(CHAPTER)/_toc.yml > _build/chapter-$(CHAPTER)/pages
	rm -rf _build/chapter-$(CHAPTER)/_build
	ICLLIB_MODE=$${ICLLIB_MODE:-default} $(EXECUTE) $$(cat _build/chapter-$(CHAPTER)/pages)
	ICLLIB_MODE=$${ICLLIB_MODE:-default} $(BIN)/jupyter-book build . --toc _build/chapter-$(CHAPTER)/_toc.yml \
	  --path-output _build/chapter-$(CHAPTER) -n --keep-going 2>&1 | tee _build/chapter-$(CHAPTER)/build.log
	@! grep "WARNING\|ERROR" _build/chapter-$(CHAPTER)/build.log | grep -v "IPKernelApp\|intro.md:[0-9]*: WARNING: unknown document"

# Which numbered results of the papers (../shared/papers) have no ledger row; which quotes are not verbatim.
coverage: $(VENV)/.installed
	$(BIN)/python -m icllib.coverage

# Run a chapter (or all, each a task of the executor: one at a time here, or as Slurm jobs with
# ICLLIB_EXECUTOR=submitit) in `full` mode and archive its checks in results/full/<chapter>.json, then describe the
# archives again in results/ro-crate-metadata.json: `make paper-scale CHAPTER=scan_snap`, on a GPU
# `ICLLIB_DEVICE=cuda make paper-scale CHAPTER=all`. Hours, or a GPU: not part of `make test` or `make book`.
paper-scale: check-mode $(VENV)/.installed
	@test -n "$(CHAPTER)" || { echo "usage: make paper-scale CHAPTER=<notebook name>|all" >&2; exit 2; }
	@# ICLLIB_DEVICE=cuda on a machine without CUDA stops here, not after an hour; a Slurm job's node checks its own
	@if [ "$${ICLLIB_EXECUTOR:-local}" != submitit ]; then $(BIN)/python -m icllib.config; fi
	$(BIN)/python _ext/paper_scale.py $(CHAPTER)

# The chapters' code cells to the width of the site's code column (settings: pyproject.toml [tool.black]).
format: $(VENV)/.installed
	$(BIN)/black notebooks

benchmarks: $(VENV)/.installed
	$(BIN)/python -m benchmarks

clean:
	rm -rf _build
