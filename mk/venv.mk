# dsview - the project-local Python environment (included by the Makefile).
# build/venv: /usr/bin/python3's venv with --system-site-packages and the
# pinned writers of tests/venv/requirements.txt (why each is there: that
# file). One venv for every build directory; `make test` makes it once and
# again when the requirements change. VENV_PY is passed to the e2e tests as
# DSVIEW_VENV_PY.
VENV    := build/venv
VENV_PY := $(abspath $(VENV))/bin/python

$(VENV)/.done: tests/venv/requirements.txt
	rm -rf $(VENV)
	$(PYTHON) -m venv --system-site-packages $(VENV)
	$(VENV_PY) -m pip install -q --disable-pip-version-check --no-deps \
	  -r tests/venv/requirements.txt
	touch $@

venv: $(VENV)/.done

# The blosc2 wheel's libblosc2 (its directory), which dsview loads for
# HDF5's Blosc2 filter: the fuzz runs put it on the loader's path (the e2e
# tests find it themselves). Empty until `make venv` has run.
VENV_BLOSC2_LIB = $(firstword $(wildcard $(abspath $(VENV))/lib/python3*/site-packages/blosc2/lib))

.PHONY: venv

# The torch-2 suite: the Python package's torch-facing e2e tests under
# PyPI's torch 2.x with numpy 2 (tests/venv/torch2.txt, why each is there),
# in a venv of its own, made once and topped up by pip when that file changes
# (a few GB downloaded once: .ci/run calls it, `make test` does not; a line
# removed from the file leaves its package installed). The tests run under its
# Python; fixtures are still written by build/venv (DSVIEW_VENV_PY).
TORCH2_VENV := build/venv-torch2
TORCH2_PY   := $(abspath $(TORCH2_VENV))/bin/python
TORCH2_E2E  ?= test_long_jobs.py test_python.py test_distributed.py test_source_index.py \
               test_bfloat16.py test_stateful.py

$(TORCH2_VENV)/.done: tests/venv/torch2.txt
	test -x $(TORCH2_PY) || $(PYTHON) -m venv $(TORCH2_VENV)
	$(TORCH2_PY) -m pip install -q --disable-pip-version-check --no-deps \
	  -r tests/venv/torch2.txt
	touch $@

test-torch2: $(BIN) $(SO) venv $(TORCH2_VENV)/.done
	@$(TORCH2_PY) -c "import numpy, torch; print('torch-2 suite: torch', torch.__version__, \
	  'numpy', numpy.__version__); assert int(torch.__version__.split('.')[0]) >= 2 <= int(numpy.__version__.split('.')[0])"
	DSVIEW=$(abspath $(BIN)) DSVIEW_VENV_PY=$(VENV_PY) $(TORCH2_PY) tests/e2e/run.py $(TORCH2_E2E)

.PHONY: test-torch2
