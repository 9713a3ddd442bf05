# The two commands of the quick start: `make demo` and `make test`.
# Both create .venv on first use and install the package with its extras from this repository.
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
EXTRAS ?= dev,ray,torch,docs,service

.PHONY: setup demo test lint bench docs load-test clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

setup: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/gpuweave demo

test: $(STAMP)
	$(VENV)/bin/ruff check src tests tools
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=15 --durations-min=5

# The documentation site into site/: reference pages generated from the commands and recordings, then mkdocs
# (offline: no web fonts, no plugins that fetch anything). Links are page.html (use_directory_urls: false), so
# site/index.html works opened from disk (tests/test_docs.py follows every link in headless Chromium).
docs: $(STAMP)
	$(PY) tools/gen_docs.py
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

# The service's full load test: 1,000 submissions from 50 clients on loopback (docs/service.md).
load-test: $(STAMP)
	$(PY) -m pytest -q -p no:xdist -m load tests/service/test_load.py -s

bench: $(STAMP)
	$(VENV)/bin/gpuweave bench sim --jobs 20000 --gpus 1024 --policy fifo --json

clean:
	rm -rf $(VENV) gpuweave-out .pytest_cache .mypy_cache site
