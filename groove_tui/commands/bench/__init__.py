"""`groove-tui bench`: the command and its report (`command`) and the measurements it runs, one module per
mode: search latency (`search`), indexing throughput (`indexing`), readers during an index (`readers`),
synthetic scale (`scale`). Nothing is re-exported."""
