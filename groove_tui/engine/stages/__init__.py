"""The optional stages after fusion, each a pure function of its inputs: cross-encoder reranking (`rerank`),
MMR diversity (`mmr`), the parent retriever (`parent`) and match spans for highlights (`spans`). They never
read the index (the searcher hands them rows); nothing is re-exported."""
