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
