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

.PHONY: run test test-unit test-integration test-e2e bench lint fmt migrate clean openclaw

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

# The web server (gunicorn, $(WEB_WORKERS) workers) and one Celery worker with beat embedded, in the
# foreground; Ctrl-C stops all of them. The access log leaves out query strings and referrers, which
# can hold what a user typed (the Django log lines pass a redacting filter; gunicorn's do not).
run: migrate
	$(PY) manage.py ensure_admin
	@echo "Reflection on http://127.0.0.1:$(PORT)/  (admin: /admin/, API docs: /api/docs, health: /healthz)"
	@trap 'kill 0' INT TERM EXIT; \
	$(VENV)/bin/celery -A reflection_site worker --beat -Q celery,guardian -c $(WORKER_CONCURRENCY) --loglevel INFO & \
	$(VENV)/bin/gunicorn reflection_site.wsgi --bind 127.0.0.1:$(PORT) --workers $(WEB_WORKERS) \
		--access-logfile - --access-logformat '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms "%(a)s"' & \
	wait

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
