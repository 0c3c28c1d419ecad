# kfdguard: the two commands of the quick start, and the rest.
#   make demo   the guardian against bundled simulated machines, then the service on a private bus
#   make test   the whole test suite (lint, type check, unit, integration)
# Both install what they need first (Debian/Ubuntu packages, a virtualenv).

VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kfdguard-deps
# Owning a name on a system bus and running polkitd need root.
ROOTCMD := $(if $(filter 0,$(shell id -u)),,sudo)
DEMO_MACHINES ?= rx7900xtx-ubuntu2404 780m-ubuntu2204-ga kfd-perms-0600

.PHONY: all demo test deps lint bench clean help

all: help

help:
	@echo "make demo   run kfdguard against bundled simulated machines"
	@echo "make test   run the whole test suite"
	@echo "make deps   install the Debian packages and the virtualenv only"

deps: $(STAMP)

$(STAMP): pyproject.toml scripts/install-deps scripts/debian-packages.txt
	VENV=$(VENV) scripts/install-deps
	@touch $@

demo: deps
	@for m in $(DEMO_MACHINES); do \
		echo "════════ $$ kfdguard check --machine $$m"; \
		$(PY) -m kfdguard check --machine $$m; \
		echo "(exit status $$?)"; echo; \
	done
	@echo "════════ $$ kfdguard enforce --machine kfd-perms-0600   (repairs a simulated copy)"
	@$(PY) -m kfdguard enforce --machine kfd-perms-0600; echo "(exit status $$?)"
	@echo; echo "════════ the service on a private system bus, seen by busctl, gdbus and two users"
	@$(ROOTCMD) $(PY) -m kfdguard.devtools.demo

test: deps
	$(PY) -m pytest

bench: deps
	$(PY) -m benchmarks.bench_kernellog

lint: deps
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m mypy --strict kfdguard tests

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis

# ---------------------------------------------------------------------------
# The GNOME Shell extension (docs/GNOME.md).
#   make extension     dist/kfdguard@kfdguard.org.shell43.zip (GNOME 43, 44) and .shell45.zip (45 and later)
#   make screenshots   regenerate docs/screenshots/ in a real headless gnome-shell (as root, like the tests)

.PHONY: extension screenshots

extension:
	sh gnome-extension/build.sh dist

screenshots: deps
	KFDGUARD_SCREENSHOTS=$(CURDIR)/docs/screenshots $(PY) -m pytest -q tests/gnome/test_shell.py
