"""How text becomes terms, shared by every step of the pipeline: the groove-compatible query compiler (`query`),
CJK bigram segmentation (`bigram`) and writing-system detection (`scripts`). Its own package, not part of
`retrieve`, because the indexer writes with it and the stages highlight with it too. Nothing is re-exported."""
