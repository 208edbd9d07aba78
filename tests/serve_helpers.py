"""What the serve tests share: a served KB (engine, service, low-level server) opened the way
`groove-tui serve` opens it, and the text of a tool's answer as JSON."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def served(kb: Path, *flags: str):
    """(service, server) for `groove-tui serve KB --model hashing FLAGS…`, its settings read exactly as
    the command reads them (groove.toml in the working directory, the flags), the index built first."""
    from groove_tui.cli import build_parser
    from groove_tui.commands.common import load_engine
    from groove_tui.commands.serve import settings_for
    from groove_tui.server.app import build_server
    from groove_tui.server.kb import KbService

    args = build_parser().parse_args(["serve", str(kb), "--model", "hashing", *flags])
    config, _flags = settings_for(args)
    engine = load_engine(args, config=config)
    try:
        engine.index()
        service = KbService(engine)
        yield service, build_server(service)
    finally:
        engine.close()


def answer(result: Any) -> Any:
    """A tool result's JSON (its one text block)."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    return json.loads(result.content[0].text)
