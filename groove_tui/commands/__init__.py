"""The headless subcommands, one module per command named after it (`index`, `search`, `status`, `eval`, ...).
Each exposes `run(args) -> int`, which `groove_tui.cli` calls after parsing; `common` holds what several
share (loading the engine, search flags into params, user errors)."""
