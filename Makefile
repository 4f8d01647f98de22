# The targets CI runs. `make test` and `make run` set up .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint type bench soak gen format clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# The CPU build of torch lies on this machine's disk; any other torch spec pulls a
	# multi-GB CUDA build, so pin it before the local-embedding extra asks for torch.
	$(BIN)/python -m pip install --quiet "torch==2.13.0"
	$(BIN)/python -m pip install --quiet -e ".[dev,local]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/memorybank serve --demo

test: $(STAMP)
	$(BIN)/python scripts/gen_sync.py --check
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests scripts bench
	$(BIN)/ruff format --check src tests scripts bench
	$(BIN)/python scripts/gen_sync.py --check

type: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench

# Not in CI: the reliability suite at 5x its CI counts (25 kills per store, 4 x 300
# appends, 1,000 open/close cycles), then 5 minutes of mixed load on every store.
soak: $(STAMP)
	MEMORYBANK_RELIABILITY_SCALE=5 $(BIN)/python -m pytest tests/reliability -q
	$(BIN)/python -m bench.soak --all

gen: $(STAMP)
	$(BIN)/python scripts/gen_sync.py

format: $(STAMP)
	$(BIN)/ruff format src tests scripts bench
	$(BIN)/ruff check --fix src tests scripts bench

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
