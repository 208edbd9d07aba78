"""The models: embedders and their offline-safe loading (`embedders`, `e5onnx`), the catalog of known models
(`catalog`), which embedder a new index gets (`choice`) and installing a model, verified (`pull`).
Nothing is re-exported."""
