# The README's commands. `make run` and `make test` set up everything they need on first use
# and only reinstall when pyproject.toml changes.
VENV := .venv
PY := $(VENV)/bin/python
STAMP_RUN := $(VENV)/.installed-run
STAMP_TEST := $(VENV)/.installed-test
# Front-end packages (CSS framework, charts) from npm; reinstalled when package.json changes.
STAMP_NODE := node_modules/.installed
# The TypeScript client's build and test tools (tsc, the AI SDK, @openai/agents) from npm.
STAMP_TS := clients/typescript/node_modules/.installed
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: run test check lint format bench clean-data

run: $(STAMP_RUN) $(STAMP_NODE)
	$(VENV)/bin/hindsight run

# One test process per core (pytest-xdist), each on embedded services of its own
# (.hindsight/test-gw0, ...); the tests of one file stay in one process (their fixtures), and
# the files are dealt in the suite's order: the long ones first (tests/support/ordering.py).
# PYTEST_WORKERS=0 runs them in this process, one after the other.
PYTEST_WORKERS ?= auto
test: $(STAMP_TEST) $(STAMP_NODE) $(STAMP_TS)
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# The quick tier while working: no browser, no `hindsight run`, no Celery worker process, no
# slow property or migration tests, no framework integrations (CI and `make test` run everything).
check: $(STAMP_TEST)
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder \
		-m "not worker and not launcher and not browser and not slow" --ignore=tests/clients/integrations $(PYTEST_ARGS)

# mypy loads the settings (django-stubs): importing them starts and writes nothing
lint: $(STAMP_TEST)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: $(STAMP_TEST)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(STAMP_TEST)
	$(PY) bench/ingest.py

$(PY):
	@scripts/ensure_venv.sh $(VENV)

# The agents' client is its own distribution (clients/python/); the server depends on it.
$(STAMP_RUN): pyproject.toml clients/python/pyproject.toml | $(PY)
	@scripts/ensure_venv.sh $(VENV)
	$(PIP) -e ./clients/python -e .
	$(PY) scripts/fetch_tokenizer.py $(VENV)/share/hindsight/tokenizer.json
	$(PY) scripts/build_embedding_model.py $(VENV)/share/hindsight/all-MiniLM-L6-v2-int8-dynamic.onnx
	@touch $@

$(STAMP_TEST): pyproject.toml clients/python/pyproject.toml $(STAMP_RUN)
	$(PIP) -e './clients/python[langchain,openai-agents,pydantic-ai]' -e '.[test]'
	@touch $@

$(STAMP_NODE): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

$(STAMP_TS): clients/typescript/package.json clients/typescript/package-lock.json
	cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

clean-data:
	rm -rf .hindsight
