# Two commands do all the set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test check venv clean bench

# setup.py builds the compiled module skitter._speedups (Cython, optional: README "Compiled code")
$(STAMP): pyproject.toml setup.py src/skitter/_speedups.pyx
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/skitter demo

# in TEST_WORKERS processes (pytest-xdist), a test module's tests in one of them, so that its
# module-scoped webs and crawls are built once: the end-to-end tests mostly wait on loopback
# servers, crawl delays and timeouts, so 4 on two cores take minutes instead of 15. Then the
# tests marked `alone` in one process, with the machine to themselves: the distributed crawls
# (processes, outages and kills timed against each other) and the crawls whose politeness is
# checked by when requests reached the server. TEST_WORKERS=0: all in this process.
TEST_WORKERS ?= 4

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadscope -m "not alone"
	$(BIN)/python -m pytest -q -p no:cacheprovider -m alone

# the linter and the type checker (configured in pyproject.toml); CI runs this before the tests
check: $(STAMP)
	$(BIN)/python -m ruff check .
	$(BIN)/python -m mypy

BENCH_STAMP := $(VENV)/.bench-installed
BENCH_ARGS  ?=

$(BENCH_STAMP): $(STAMP) bench/requirements.txt
	$(BIN)/pip install -q -r bench/requirements.txt
	touch $(BENCH_STAMP)

# skitter vs Scrapy vs a bare client on a generated web served by nginx (docs/benchmarks.md)
bench: $(BENCH_STAMP)
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build src/*.egg-info src/skitter/_speedups.c src/skitter/_speedups.*.so
