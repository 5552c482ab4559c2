# Two commands do all the set-up on a fresh machine with Python 3.11, 3.12 or 3.13: `make serve` and `make test`.
# Two locks from one resolution: requirements-serve.lock (what serving needs; `make serve`, `make install`) and
# requirements.lock (the same pins plus the test extras; `make test`). `make lock` regenerates both.
PYTHON ?= $(shell .ci/python.sh)
VENV   := .venv
BIN    := $(VENV)/bin
SERVE_LOCK := requirements-serve.lock
TEST_LOCK  := requirements.lock
# One stamp per installed set, named by the hash of what it was installed from; the test set includes the serve set.
# Syncs compile every package's bytecode (pip's default; uv's is not to): where PYTHONDONTWRITEBYTECODE is set, every
# process would otherwise compile all it imports again (Prefect's server: about 7 s of CPU instead of 4), and the
# suite starts hundreds of processes. `-pyc` names stamps of such installs, so an older venv is synced once more.
STAMP_SERVE := $(VENV)/.installed-serve-$(shell cat $(SERVE_LOCK) pyproject.toml setup.py | sha1sum | cut -c1-12)-pyc
STAMP_TEST  := $(VENV)/.installed-test-$(shell cat $(TEST_LOCK) pyproject.toml setup.py | sha1sum | cut -c1-12)-pyc
UV     := $(BIN)/uv
UV_VERSION := 0.13.8
UV_STAMP := $(VENV)/.uv-$(UV_VERSION)

.PHONY: install install-test browser prometheus serve test test-fast check-pythons lock bench-latency clean notebooks

install: $(STAMP_SERVE)

install-test: $(STAMP_TEST)

# The virtual environment with the pinned uv in it.
$(UV_STAMP):
	@test -x $(BIN)/python || test -n "$(PYTHON)" || .ci/python.sh >/dev/null
	@test -x $(BIN)/python || $(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' \
		|| { echo "error: $(PYTHON) is Python $$($(PYTHON) -c 'import sys; print(sys.version.split()[0])'); switchboard needs 3.11, 3.12 or 3.13"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	@rm -f $(VENV)/.uv-* && touch $@

# The serve set; nothing to do when the test set of the same pins is installed (it includes it).
$(STAMP_SERVE): $(SERVE_LOCK) pyproject.toml setup.py | $(UV_STAMP)
	@if [ -e $(STAMP_TEST) ]; then touch $@; else \
	  $(UV) pip sync --compile-bytecode --python $(BIN)/python $(SERVE_LOCK) && \
	  $(UV) pip install --python $(BIN)/python --no-deps -e . && \
	  rm -f $(VENV)/.installed-* && touch $@; fi

$(STAMP_TEST): $(TEST_LOCK) pyproject.toml setup.py | $(UV_STAMP)
	$(UV) pip sync --compile-bytecode --python $(BIN)/python $(TEST_LOCK)
	$(UV) pip install --python $(BIN)/python --no-deps -e .
	@rm -f $(VENV)/.installed-* && touch $@ $(STAMP_SERVE)

serve: install
	$(BIN)/switchboard serve

# The full suite CI runs (.ci/run): unit tests, flow tests, and end-to-end runs of the real service.
test: install-test browser prometheus
	$(BIN)/python -m pytest

# Headless Chromium for the Prefect UI's login test (tests/e2e/test_prefect_ui_login.py): Debian's package, installed
# when missing and this runs as root with apt-get (CI); elsewhere the test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || echo "note: chromium is not installed; the Prefect UI browser test will be skipped"

# A real Prometheus server for the metrics test (tests/e2e/test_prometheus.py scrapes `serve` with it): Debian's
# package, installed when missing and this runs as root with apt-get (CI); elsewhere the test skips and says why.
prometheus:
	@command -v prometheus >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null; } \
	  || echo "note: prometheus is not installed; the Prometheus scrape test will be skipped"

# The analysts' notebooks (notebooks/): the test set brings their kernel (ipykernel) and runner (nbclient); this runs
# each against SWITCHBOARD_DATA_DIR (default ./data) and writes the executed copies to <data dir>/notebooks/.
notebooks: install-test
	$(BIN)/python notebooks/execute.py

# Unit and flow tests only (no end-to-end service runs): a few minutes, for the edit-test loop.
test-fast: install-test
	$(BIN)/python -m pytest -m "not e2e"

# modelSelect latency over HTTP with wrk (docs/benchmarks.md); needs `apt-get install wrk`.
bench-latency: install-test
	$(BIN)/python -m benchmarks.routing_latency

# Install the locked set into a fresh venv for each supported Python found here, import everything and answer one
# modelSelect (tests/support/python_smoke.py). Slow (a few minutes); not part of `make test`.
check-pythons: install-test
	@for v in 3.11 3.12 3.13; do \
	  py=; for c in $$(command -v python$$v) $$HOME/.pyenv/versions/$$v.*/bin/python$$v; do \
	    if [ -x "$$c" ] && "$$c" -c 'import sys' 2>/dev/null; then py=$$c; break; fi; done; \
	  if [ -z "$$py" ]; then echo "python$$v: not found, skipped"; continue; fi; \
	  rm -rf .venv-$$v && $(UV) venv -q -p $$py .venv-$$v && \
	  $(UV) pip sync -q --python .venv-$$v/bin/python $(TEST_LOCK) && \
	  $(UV) pip install -q --python .venv-$$v/bin/python --no-deps . && \
	  (cd /tmp && $(CURDIR)/.venv-$$v/bin/python $(CURDIR)/tests/support/python_smoke.py) || exit 1; \
	  rm -rf .venv-$$v; \
	done

# Re-resolve the pinned, hashed dependency sets after editing pyproject.toml (every supported Python at once): the
# test set first (the existing pins are preferences, so only what must change moves), then the serve set constrained
# to its pins.
lock: $(UV_STAMP)
	$(UV) pip compile pyproject.toml --extra test --universal --python-version 3.11 --generate-hashes -o $(TEST_LOCK)
	$(UV) pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes -c $(TEST_LOCK) -o $(SERVE_LOCK)

clean:
	rm -rf $(VENV) .pytest_cache
