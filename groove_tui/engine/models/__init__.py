"""The models: embedders (`embedders`, `e5onnx`), fastembed run offline (`offline`), the catalog of known
models (`catalog`), which embedder a new index gets (`choice`) and installing a model, verified (`pull`).
Nothing is re-exported."""
