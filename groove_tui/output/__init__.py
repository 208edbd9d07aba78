"""Output shared by the headless commands and the explorer: plain-text renderings made safe for a terminal
(`textout`) and the one-line stderr progress bar (`progress`). Imports the engine's public types only; nothing
is re-exported."""
