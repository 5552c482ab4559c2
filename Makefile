# Two commands do all the set-up on a fresh machine with Python 3.11, 3.12 or 3.13: `make serve` and `make test`.
PYTHON ?= $(shell .ci/python.sh)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat requirements.lock pyproject.toml setup.py | sha1sum | cut -c1-12)
UV     := $(BIN)/uv
UV_VERSION := 0.13.8

.PHONY: install browser serve test test-fast check-pythons lock bench-latency clean

install: $(STAMP)

$(STAMP): requirements.lock pyproject.toml setup.py
	@test -x $(BIN)/python || test -n "$(PYTHON)" || .ci/python.sh >/dev/null
	@test -x $(BIN)/python || $(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' \
		|| { echo "error: $(PYTHON) is Python $$($(PYTHON) -c 'import sys; print(sys.version.split()[0])'); switchboard needs 3.11, 3.12 or 3.13"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -m pip install --quiet --disable-pip-version-check uv==$(UV_VERSION)
	$(UV) pip sync --python $(BIN)/python requirements.lock
	$(UV) pip install --python $(BIN)/python --no-deps -e .
	@rm -f $(VENV)/.installed-* && touch $@

serve: install
	$(BIN)/switchboard serve

# The full suite CI runs (.ci/run): unit tests, flow tests, and end-to-end runs of the real service.
test: install browser
	$(BIN)/python -m pytest

# Headless Chromium for the Prefect UI's login test (tests/e2e/test_prefect_ui_login.py): Debian's package, installed
# when missing and this runs as root with apt-get (CI); elsewhere the test skips and says why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || echo "note: chromium is not installed; the Prefect UI browser test will be skipped"

# Unit and flow tests only (no end-to-end service runs): a few minutes, for the edit-test loop.
test-fast: install
	$(BIN)/python -m pytest -m "not e2e"

# modelSelect latency over HTTP with wrk (docs/benchmarks.md); needs `apt-get install wrk`.
bench-latency: install
	$(BIN)/python -m benchmarks.routing_latency

# Install the locked set into a fresh venv for each supported Python found here, import everything and answer one
# modelSelect (tests/support/python_smoke.py). Slow (a few minutes); not part of `make test`.
check-pythons: install
	@for v in 3.11 3.12 3.13; do \
	  py=; for c in $$(command -v python$$v) $$HOME/.pyenv/versions/$$v.*/bin/python$$v; do \
	    if [ -x "$$c" ] && "$$c" -c 'import sys' 2>/dev/null; then py=$$c; break; fi; done; \
	  if [ -z "$$py" ]; then echo "python$$v: not found, skipped"; continue; fi; \
	  rm -rf .venv-$$v && $(UV) venv -q -p $$py .venv-$$v && \
	  $(UV) pip sync -q --python .venv-$$v/bin/python requirements.lock && \
	  $(UV) pip install -q --python .venv-$$v/bin/python --no-deps . && \
	  (cd /tmp && $(CURDIR)/.venv-$$v/bin/python $(CURDIR)/tests/support/python_smoke.py) || exit 1; \
	  rm -rf .venv-$$v; \
	done

# Re-resolve the pinned, hashed dependency set after editing pyproject.toml (every supported Python at once).
lock: install
	$(UV) pip compile pyproject.toml --extra test --universal --python-version 3.11 --generate-hashes -o requirements.lock

clean:
	rm -rf $(VENV) .pytest_cache
