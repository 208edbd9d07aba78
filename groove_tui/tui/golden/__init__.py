"""Golden files in the explorer: judgments, their YAML, the live metrics and the tuning screens' model."""
