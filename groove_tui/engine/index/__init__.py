"""Writing the index: the KB on disk (`walk`), Markdown parsing and chunking (`markdown`), the two-phase indexer
(`indexer`), the SQLite store (`store`), the phrase statistics kept for the pruned full-text leg
(`phrase_stats`), embedding throughput (`throughput`) and part-embedded copies (`coverage`). Nothing re-exported."""
