PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test chromium mpirun test-adversarial demo docs bench bench-deps clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# Types (mypy, [tool.mypy]) and the layering (import-linter, [tool.importlinter]) are
# checked before the tests run; either failing fails `make test`.
# The tests run on every core (pytest-xdist): one worker per core, each test file whole on
# one worker (--dist loadfile), so a module's fixtures are made once and its tests keep
# their order; daemons pick free ports and every test works in its own tmp_path.
# PYTEST_WORKERS=0 runs them in this process, one after the other.
PYTEST_WORKERS ?= auto
test: $(STAMP) chromium mpirun
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

# Debian's chromium for the status page's browser test (tests/integration/test_status_page_browser.py):
# installed only as root and only if missing; never fatal (the test then skips, saying why).
# ICND_NO_CHROMIUM=1 skips the install.
chromium:
	@if [ -z "$$ICND_NO_CHROMIUM" ] && [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = 0 ] \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "make test: installing chromium for the status page's browser test (ICND_NO_CHROMIUM=1 skips)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	    || echo "make test: installing chromium failed: the browser test will be skipped" >&2; \
	fi

# Open MPI's mpirun for the test that starts an icnd.mpi program with it
# (tests/mpi/test_mpi_jobs.py: mpirun only launches, icnd carries the bytes): installed only
# as root and only if missing; never fatal (the test then skips, saying why).
# ICND_NO_MPIRUN=1 skips the install.
mpirun:
	@if [ -z "$$ICND_NO_MPIRUN" ] && ! command -v mpirun >/dev/null 2>&1 && [ "$$(id -u)" = 0 ] \
	    && command -v apt-get >/dev/null 2>&1; then \
	  echo "make test: installing Open MPI's mpirun for tests/mpi (ICND_NO_MPIRUN=1 skips)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin >/dev/null) \
	    || echo "make test: installing openmpi-bin failed: the mpirun test will be skipped" >&2; \
	fi

# The attacks at full size (marker `fullsize`; minutes, not seconds): against a real daemon
# (tests/adversarial/test_fullsize.py), link-state floods against the router
# (tests/adversarial/test_r_fullsize.py), and the routing fuzzer at full size
# (tests/property/test_routing_fuzz.py, ICND_FUZZ_MESSAGES): each prints a `FULLSIZE {...}` line.
test-adversarial: $(STAMP)
	$(BIN)/python -m pytest -q -s -p no:cacheprovider -m fullsize tests/adversarial/test_fullsize.py \
	    tests/adversarial/test_r_fullsize.py tests/property/test_routing_fuzz.py

# The demo needs the package alone (no test extras): its own stamp, installed quietly.
DEMO_STAMP := $(VENV)/.installed-demo

$(DEMO_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e .
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/python -m icnd.demo

# The API reference, generated from the docstrings by pdoc (the `docs` extra) into build/api
# (not committed): open build/api/index.html, the `icnd` package's page, whose docstring links
# every module of API_MODULES.  API_TEMPLATE: pdoc's page, a class's methods before its
# attributes.  tests/test_api_docs.py renders API_MODULES with API_TEMPLATE too.
DOCS_STAMP := $(VENV)/.installed-docs
API_TEMPLATE := docs/api-template
API_MODULES := icnd icnd.client icnd.topology icnd.trust icnd.security icnd.errors icnd.name \
	icnd.packet icnd.codec icnd.compute.registry icnd.reduction.consumer

$(DOCS_STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	rm -rf build/api
	$(BIN)/python -m pdoc --template-directory $(API_TEMPLATE) --output-directory build/api $(API_MODULES)
	@echo "API reference: build/api/index.html"

# The MPI baseline of bench/reduce.py: Open MPI from Debian (only as root, only
# if mpirun is missing), then mpi4py into the venv.  Never fatal: without them
# bench/reduce.py says so and prints no ratio.  `make test` does not need this.
bench-deps: $(STAMP)
	@if ! command -v mpicc >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y openmpi-bin libopenmpi-dev \
	      || echo "bench-deps: installing Open MPI failed: bench/reduce.py and bench/collectives.py will have no MPI baseline" >&2; \
	  else \
	    echo "bench-deps: mpirun not found; install Open MPI (Debian: openmpi-bin libopenmpi-dev)" \
	      "for the MPI baselines of bench/reduce.py and bench/collectives.py" >&2; \
	  fi; \
	fi
	@if command -v mpirun >/dev/null 2>&1 && ! $(BIN)/python -c 'import mpi4py' 2>/dev/null; then \
	  $(BIN)/python -m pip install --quiet mpi4py \
	    || echo "bench-deps: pip install mpi4py failed: bench/reduce.py and bench/collectives.py will have no MPI baseline" >&2; \
	fi

bench: $(STAMP) bench-deps
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/core.py
	$(BIN)/python bench/forward.py
	$(BIN)/python bench/objects.py
	$(BIN)/python bench/rmi.py
	$(BIN)/python bench/ndn.py
	$(BIN)/python bench/sim.py
	$(BIN)/python bench/reduce.py
	$(BIN)/python bench/collectives.py

clean:
	rm -rf $(VENV) build *.egg-info
