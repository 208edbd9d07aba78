"""Output shared by the headless commands and the explorer: plain-text renderings made safe for a terminal
(`textout`), the one-line stderr progress bar (`progress`), and the measurement records `eval` and `bench`
write with `--record` (`records`). Imports the engine's public types only; nothing
is re-exported."""
