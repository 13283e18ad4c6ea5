# Reflection: `make run` starts the service on the embedded default; `make test` runs every suite.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 8000
WEB_WORKERS ?= 2
WORKER_CONCURRENCY ?= 2
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/reflection
TEST_REDIS_URL ?= redis://127.0.0.1:6379/15
export PORT

.PHONY: run test test-unit test-integration test-e2e test-install bench lint fmt migrate clean openclaw

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.runtime: requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.runtime $@

migrate: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput

# The web server (gunicorn, $(WEB_WORKERS) workers) and one Celery worker with beat embedded, in the foreground,
# under supervisord (supervisord.conf): a process that exits is restarted with a log line, one that keeps failing
# stops the run with a message and a non-zero status, and Ctrl-C stops both within 10 s. While it runs,
# var/run.env tells `manage.py` in another terminal which data this run serves (reflection_site/settings.py).
RUN_WORKSPACE_DIR = $(abspath $(or $(WORKSPACE_DIR),$(CURDIR)/var/workspace))
RUN_DIR = $(RUN_WORKSPACE_DIR)/.openclaw-reflection/run
run: migrate
	$(PY) manage.py ensure_admin
	@echo "Reflection on http://127.0.0.1:$(PORT)/  (admin: /admin/, API docs: /api/docs, health: /healthz)"
	@mkdir -p var $(RUN_DIR) && rm -f $(RUN_DIR)/failed && (umask 077; { \
		echo "# Written by make run (pid $$$$) while it runs: manage.py without WORKSPACE_DIR uses this data."; \
		echo "REFLECTION_RUN_PID=$$$$"; echo "WORKSPACE_DIR=$(RUN_WORKSPACE_DIR)"; \
		if [ -n "$$DATABASE_URL" ]; then echo "DATABASE_URL=$$DATABASE_URL"; fi; \
		if [ -n "$$REDIS_URL" ]; then echo "REDIS_URL=$$REDIS_URL"; fi; } > var/run.env); \
	WORKSPACE_DIR=$(RUN_WORKSPACE_DIR) WEB_WORKERS=$(WEB_WORKERS) WORKER_CONCURRENCY=$(WORKER_CONCURRENCY) \
		REFLECTION_RUN_DIR=$(RUN_DIR) REFLECTION_RUN_FAILED=$(RUN_DIR)/failed \
		$(VENV)/bin/supervisord -c supervisord.conf; \
	status=$$?; grep -qx "REFLECTION_RUN_PID=$$$$" var/run.env 2>/dev/null && rm -f var/run.env; \
	if [ -e $(RUN_DIR)/failed ]; then cat $(RUN_DIR)/failed >&2; exit 1; fi; exit $$status

test: $(VENV)/.dev
	$(MAKE) --no-print-directory test-unit
	$(MAKE) --no-print-directory test-integration
	$(MAKE) --no-print-directory test-e2e

test-unit: $(VENV)/.dev
	$(PY) -m pytest tests -q --ignore=tests/integration --ignore=tests/e2e

# The real OpenClaw for its end-to-end tests: Node 24 from PyPI (requirements-dev.txt), openclaw from npm,
# cached under var/openclaw/<version> (tests/openclaw_harness.py checks the version that landed).
openclaw: $(VENV)/.dev
	$(PY) tests/openclaw_harness.py install

test-integration: $(VENV)/.dev openclaw
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest tests/integration -q

test-e2e: $(VENV)/.dev
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest tests/e2e -q

# Production from requirements.txt alone (a venv of its own under var/install-check/): migrate, check --deploy and
# make run's supervisord with REDIS_URL. Part of test-integration; this target runs it alone.
test-install: $(VENV)/.dev
	DATABASE_URL=$(TEST_DATABASE_URL) REDIS_URL=$(TEST_REDIS_URL) $(PY) -m pytest tests/integration/test_install_runtime.py -q

bench: $(VENV)/.dev
	@set -e; for script in benchmarks/[!_]*.py; do echo "== $$script"; $(PY) $$script; done

lint: $(VENV)/.dev
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

fmt: $(VENV)/.dev
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) var
