# Two commands do all the set-up on a fresh machine with Python 3.11: `make serve` and `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml setup.py | sha1sum | cut -c1-12)
UV     := $(BIN)/uv
UV_VERSION := 0.13.8

.PHONY: install serve test test-fast lock bench-latency clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml setup.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip sync --python $(BIN)/python requirements.lock
	$(UV) pip install --python $(BIN)/python --no-deps -e .
	@rm -f $(VENV)/.installed-* && touch $@

serve: install
	$(BIN)/switchboard serve

# The full suite CI runs (.ci/run): unit tests, flow tests, and end-to-end runs of the real service.
test: install
	$(BIN)/python -m pytest

# Unit and flow tests only (no end-to-end service runs): a few minutes, for the edit-test loop.
test-fast: install
	$(BIN)/python -m pytest -m "not e2e"

# modelSelect latency over HTTP with wrk (docs/benchmarks.md); needs `apt-get install wrk`.
bench-latency: install
	$(BIN)/python -m benchmarks.routing_latency

# Re-resolve the pinned, hashed dependency set after editing pyproject.toml.
lock: install
	$(UV) pip compile pyproject.toml --extra test --python-version 3.11 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache
