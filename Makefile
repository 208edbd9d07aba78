# Everything installs into .venv from the project's own files; nothing by hand.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA   ?= ../shared/data
export HF_HUB_OFFLINE ?= 1

.PHONY: setup demo test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: setup
	$(BIN)/groove-tui docs

test: setup
	$(BIN)/python -m pytest -q
	$(BIN)/lint-imports

bench: setup
	@if [ -d "$(DATA)/scifact" ]; then \
		$(BIN)/groove-tui bench $(DATA)/scifact/kb --queries $(DATA)/scifact/golden-train.yml; \
	else echo "no $(DATA): benchmarks need ../shared/data"; fi

clean:
	rm -rf $(VENV) .pytest_cache
