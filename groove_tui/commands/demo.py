"""`groove-tui demo`: the explorer on the handbook shipped in the package, its golden file loaded."""

from __future__ import annotations

import argparse

from groove_tui.commands.common import CLIError, config_for, mismatch_advice


def run(args: argparse.Namespace) -> int:
    """The explorer on the packaged handbook with its golden file: live metrics, ctrl+r and ctrl+b work at
    once. The folder is read where it is installed (never copied, never written); its index goes where
    every index goes."""
    from groove_tui.demo import golden_path, kb_path

    kb, golden = kb_path(), golden_path()
    if not kb.is_dir() or not golden.is_file():
        raise CLIError(f"the demo knowledge base is missing from this installation ({kb}); reinstall groove-tui")
    if args.paths:
        print(kb)
        print(golden)
        return 0
    from groove_tui.tui.app import run

    args.kb = str(kb)  # for the model-mismatch advice, which names the KB
    config = config_for(args)
    return run(
        kb,
        config=config,
        index_dir=args.index_dir,
        golden=str(golden),
        explain_mismatch=lambda exc: mismatch_advice(args, config, exc),
    )
