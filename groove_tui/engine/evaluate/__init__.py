"""Evaluation beside the pipeline: golden files (`golden`), the metrics and their aggregate (`metrics`), the run
history and its fingerprint (`history`), the settings a sweep may vary (`knobs`), sweeps (`sweep`) and
wins/losses between two runs (`winloss`). Nothing is re-exported."""
