"""Writing the index: Markdown parsing and chunking (`markdown`), the two-phase indexer (`indexer`), the SQLite
store (`store`), the full-text phrase statistics kept for pruning (`phrase_stats`), embedding throughput
(`throughput`) and part-embedded copies for evaluation (`coverage`). Nothing is re-exported."""
