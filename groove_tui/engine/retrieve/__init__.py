"""Reading candidates out of the index and fusing them: document filters (`filters`), the exact pruned full-text
leg (`fulltext`), the in-memory vector scan (`vector_scan`) and the searcher that runs both legs, fuses them and
hands the pool to the stages (`searcher`). Nothing is re-exported; `Engine.search` is the entry point."""
