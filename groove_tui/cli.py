"""Command line: builds the parser and dispatches. `groove-tui <kb>` opens the explorer; `index`, `search`,
`serve`, `eval`, `sweep`, `bench`, `status`, `config`, `models` are headless, each a module of `groove_tui.commands`.

Only argparse, the settings and the commands' shared helpers (stdlib only) are imported at module level so
`groove-tui --help` stays fast; a command's module is imported when it runs. Data goes to stdout, errors and
progress to stderr.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import math
import os
import re
import sys
from pathlib import Path
from typing import NoReturn

from groove_tui.commands.common import CLIError
from groove_tui.settings.config import FUSION_METHODS

COMMANDS = ("index", "search", "serve", "eval", "sweep", "bench", "status", "config", "models", "demo")

EPILOG = """commands:
  groove-tui KB                       open the explorer (indexes or updates first, with progress)
  groove-tui demo                     the explorer on a handbook about groove-tui, with its golden file
  groove-tui index KB [--force]       (re)index headlessly; --watch keeps it current as notes change
  groove-tui search KB "query"        search; --format json gives groove's response shape
  groove-tui serve KB                 groove's MCP server (stdio; --http HOST:PORT) with these settings
  groove-tui eval KB --golden F       recall / MRR / nDCG against a golden file
  groove-tui eval KB --compare A B    the same, two settings query by query (wins and losses)
  groove-tui sweep KB --param S       the golden set at every value of a setting (--plot charts it)
  groove-tui bench KB                 latency per stage, p50/p95
  groove-tui status KB                what the index holds
  groove-tui config show              the effective settings and where each came from
  groove-tui models [list|pull NAME]  the embedders and rerankers, and installing them

Run `groove-tui COMMAND --help` for a command's options."""


class _Parser(argparse.ArgumentParser):
    """argparse with its errors raised, so `main` can add a "did you mean" to them (argparse's own
    suggest_on_error exists only from Python 3.14)."""

    def error(self, message: str) -> NoReturn:
        raise _ParseError(self, message)


class _ParseError(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


def _closest(word: str, choices) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def _command_typo(word: str) -> str | None:
    """The subcommand `word` was probably meant to be, when it is no directory (a KB) but close to one."""
    if os.sep in word or (os.altsep and os.altsep in word) or Path(word).expanduser().is_dir():
        return None
    return _closest(word, (*COMMANDS, "open"))


def _options_of(parser: argparse.ArgumentParser) -> list[str]:
    """Every long option of `parser` and of the subcommands under it."""
    out: list[str] = []
    for action in parser._actions:
        out += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _options_of(sub)
    return out


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the subcommand named in `argv` (the top-level one if none is)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for word in argv:
                if word in action.choices:
                    return action.choices[word]
    return parser


def _unknown_option(parser: argparse.ArgumentParser, argv: list[str], words: list[str]) -> str | None:
    """ "unknown option '--limt' — did you mean '--limit'?" for the first of `words` close to an option of
    the command being run; None when none is."""
    options = _options_of(_command_parser(parser, argv))
    for word in words:
        name = word.split("=", 1)[0]
        # `-foo` is more often a query word than a mistyped option; a known option here came after `--`
        if not word.startswith("--") or name in options:
            continue
        guess = _closest(name, options)
        if guess:
            return f"unknown option {name!r} — did you mean {guess!r}?"
    return None


# ---------------------------------------------------------------- parsers


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("kb", help="the knowledge base directory")
    p.add_argument("--config", help="groove.toml to use (default: $GROOVE_TUI_CONFIG, ./groove.toml, user config)")
    p.add_argument("--index-dir", help="where indexes live (default: $GROOVE_TUI_INDEX_DIR or the user cache)")
    p.add_argument("--model", help="embedding model (overrides [embedding] model)")
    p.add_argument("--model-dir", help="where pulled models live (default: $GROOVE_TUI_MODEL_DIR or the user data dir)")


def _pipeline_flags(
    p: argparse.ArgumentParser, *, limit_help: str | None = "number of results (default 10, at most 1000)"
) -> None:
    if limit_help is not None:  # serve: the limit is each call's own
        p.add_argument("--limit", type=int, default=None, help=limit_help)
    p.add_argument("--mmr", action=argparse.BooleanOptionalAction, default=None, help="MMR diversity re-rank")
    p.add_argument("--lambda", dest="mmr_lambda", type=float, default=None, help="MMR relevance weight in [0, 1]")
    p.add_argument("--same-doc-penalty", type=float, default=None, help="MMR same-document penalty in [0, 1]")
    p.add_argument("--parent", action=argparse.BooleanOptionalAction, default=None, help="parent retriever")
    p.add_argument(
        "--reranker",
        default=None,
        help="cross-encoder: a pulled model (ms-marco-l12), groove's name, a fastembed name or a local "
        "ONNX dir ('none' = off)",
    )
    p.add_argument(
        "--rerank-pool",
        type=int,
        default=None,
        metavar="N",
        help="fused candidates the reranker scores (default [reranker] pool, 20)",
    )
    p.add_argument(
        "--rerank-max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="query + passage tokens per reranker pair (default [reranker] max_tokens, 256)",
    )
    p.add_argument(
        "--rerank-threads",
        type=int,
        default=None,
        metavar="N",
        help="ONNX threads for the reranker (default [reranker] threads; 0 = all cores)",
    )
    p.add_argument(
        "--fusion",
        choices=FUSION_METHODS,
        default=None,
        help="how the legs combine: scores normalised by their spread (dbsf, default) or range (relative), "
        "or groove's reciprocal rank fusion (rrf)",
    )


def _filter_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path-glob", action="append", default=[], metavar="G", help="glob over KB paths; !G excludes")
    p.add_argument("--tag-any", action="append", default=[], metavar="T", help="documents with any of these tags")
    p.add_argument("--tag-all", action="append", default=[], metavar="T", help="documents with all of these tags")
    p.add_argument("--date-from", help="frontmatter date >= this (YYYY-MM-DD)")
    p.add_argument("--date-to", help="frontmatter date <= this (YYYY-MM-DD)")
    p.add_argument("--category", help="first path segment equals this")
    p.add_argument("--topic", help="topic (frontmatter or second path segment) equals this")
    p.add_argument("--min-quality", type=float, default=None, help="quality threshold (default [quality_filter])")
    p.add_argument("--min-confidence-ratio", type=float, default=None, help="low_confidence ratio (finite, >= 0)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="groove-tui",
        description="See how hybrid search ranks your Markdown notes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    tui = sub.add_parser("open", help="open the explorer (the default: `groove-tui KB`)")
    _common(tui)
    tui.add_argument("--golden", help="golden file for live metrics")
    tui.add_argument(
        "--no-watch", action="store_true", help="index once when opening; do not follow edits to the notes"
    )

    demo = sub.add_parser("demo", help="open the explorer on the demo handbook, its golden file loaded")
    demo.add_argument("--config", help="groove.toml to use (default: $GROOVE_TUI_CONFIG, ./groove.toml, user config)")
    demo.add_argument("--index-dir", help="where indexes live (default: $GROOVE_TUI_INDEX_DIR or the user cache)")
    demo.add_argument("--model", help="embedding model (overrides [embedding] model)")
    demo.add_argument(
        "--model-dir", help="where pulled models live (default: $GROOVE_TUI_MODEL_DIR or the user data dir)"
    )
    demo.add_argument(
        "--paths",
        action="store_true",
        help="print the demo KB's folder and its golden file, one a line, and exit (to try the "
        "headless commands on it)",
    )

    idx = sub.add_parser("index", help="(re)index a KB headlessly")
    _common(idx)
    idx.add_argument("--force", action="store_true", help="rebuild from scratch (also after a model change)")
    idx.add_argument("--quiet", action="store_true", help="no progress bar")
    idx.add_argument("--format", choices=("text", "json"), default="text")
    idx.add_argument("--no-embed", action="store_true", help="phase one only: full text, no embeddings")
    idx.add_argument(
        "--watch",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="after indexing, follow edits to the notes and index each batch (one line per batch on "
        "stderr) until ctrl+c; --no-watch: index once (the default)",
    )
    idx.add_argument(
        "--debounce-ms", type=int, default=None, help="gather a burst of edits for at most this long (default [watch])"
    )
    idx.add_argument("--polling", action="store_true", default=None, help="poll the KB instead of OS events")

    se = sub.add_parser("search", help="search a KB")
    _common(se)
    se.add_argument("query")
    _pipeline_flags(se)
    _filter_flags(se)
    se.add_argument("--format", choices=("text", "json"), default="text")
    se.add_argument("--explain", action="store_true", help="compiled query, leg ranks, RRF terms, stage traces")
    se.add_argument(
        "--why",
        metavar="PATH[#HEADING]",
        help="why this note (or its section) is, or is not, on the page: where it fell out of the pipeline, "
        "and the one setting change that would bring it in",
    )

    sv = sub.add_parser(
        "serve",
        help="groove's MCP server over this KB, with the settings the explorer and search use",
        description="Serve the KB to MCP clients (LLM agents) with groove's tools, resources and prompts, "
        "ranked by the settings in effect here: groove.toml, the settings saved from the explorer, these "
        "flags. Speaks MCP over stdio unless --http is given. Settings and progress go to stderr. See "
        "docs/serve.md for client configuration.",
    )
    _common(sv)
    _pipeline_flags(sv, limit_help=None)
    sv.add_argument(
        "--http",
        nargs="?",
        const="127.0.0.1:3100",
        default=None,
        metavar="HOST:PORT",
        help="streamable HTTP at http://HOST:PORT/mcp instead of stdio (default 127.0.0.1:3100; a bind beyond "
        "loopback needs a bearer token)",
    )
    sv.add_argument(
        "--token",
        default=None,
        help="bearer token clients must send over HTTP (default $GROOVE_TUI_MCP_TOKEN; prefer the "
        "environment: a flag shows in the process list)",
    )
    sv.add_argument("--no-watch", action="store_true", help="do not follow edits to the notes (default [watch])")
    sv.add_argument(
        "--debounce-ms", type=int, default=None, help="gather a burst of edits for at most this long (default [watch])"
    )
    sv.add_argument("--polling", action="store_true", default=None, help="poll the KB instead of OS events")

    ev = sub.add_parser("eval", help="recall@k / MRR / nDCG@k against a golden file")
    _common(ev)
    ev.add_argument("--golden", help="golden YAML (default [eval] golden)")
    ev.add_argument("--k", default=None, help="comma-separated k values (default 1,5,10)")
    ev.add_argument("--format", choices=("text", "json"), default="text")
    ev.add_argument("--fail-on-regression", action="store_true", help="exit 1 when a metric regressed")
    ev.add_argument("--no-history", action="store_true", help="do not record this run")
    ev.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="also write a measurement record (figures, date, commit, machine, command) as JSON into "
        "DIR, or to DIR if it ends in .json (docs/evaluation.md)",
    )
    ev.add_argument("--legs", choices=("hybrid", "vector", "fts"), default="hybrid", help="which retrieval legs")
    ev.add_argument(
        "--compare",
        nargs=2,
        metavar=("A", "B"),
        default=None,
        help="score two settings query by query: each 'name=value ...' (e.g. 'mmr=true "
        "mmr_lambda=0.5') or a groove.toml; prints wins and losses with a sign test",
    )
    ev.add_argument(
        "--metric",
        choices=("ndcg", "recall", "mrr"),
        default="ndcg",
        help="--compare: the per-query metric (at the largest k; default ndcg)",
    )
    ev.add_argument(
        "--embedded-share",
        type=_share,
        default=None,
        metavar="FRACTION",
        help="evaluate a copy of the index with only this seeded share of its chunks embedded "
        "(0-1), as part way through the embedding phase; the index itself is not changed",
    )
    ev.add_argument(
        "--share-seed",
        type=int,
        default=0,
        metavar="N",
        help="--embedded-share: which chunks keep their vectors (default 0)",
    )
    _pipeline_flags(ev, limit_help="results per query (default: the largest k)")

    sw = sub.add_parser("sweep", help="score a golden file at every value of one or two settings")
    _common(sw)
    sw.add_argument("--golden", help="golden YAML (default [eval] golden)")
    sw.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="a setting and its values: START:STOP:STEP or V1,V2,... (mmr_lambda, mmr_same_doc_penalty, "
        "vector_weight, fts_weight, rrf_k, bm25_*_weight, fusion, rerank_pool, rerank_blend, mmr, "
        "parent_retriever); twice for a grid",
    )
    sw.add_argument("--k", default=None, help="comma-separated k values (default 1,5,10)")
    sw.add_argument("--metric", choices=("ndcg", "recall", "mrr"), default="ndcg", help="what 'best' means")
    sw.add_argument("--plot", action="store_true", help="draw the sweep in the terminal above the table")
    sw.add_argument("--format", choices=("text", "json"), default="text")
    sw.add_argument("--legs", choices=("hybrid", "vector", "fts"), default="hybrid", help="which retrieval legs")
    _pipeline_flags(sw, limit_help="unused: a sweep returns the largest k per query")

    be = sub.add_parser("bench", help="latency per stage (p50/p95) and indexing throughput")
    _common(be)
    be.add_argument("--queries", help="golden YAML whose queries to run (default: built-in mix)")
    be.add_argument("--repeat", type=int, default=3)
    be.add_argument("--format", choices=("text", "json"), default="text")
    be.add_argument(
        "--record",
        metavar="DIR",
        default=None,
        help="also write a measurement record (figures, date, commit, machine, command) as JSON into "
        "DIR, or to DIR if it ends in .json (docs/performance.md)",
    )
    be.add_argument(
        "--mode",
        choices=("search", "index", "all", "rerank", "readers", "serve", "soak", "watch", "peers"),
        default="search",
        help="rerank: the reranker at the configured pool, cold and cached (--reranker, --rerank-queries); "
        "readers: search latency idle and while another process indexes a copy of --docs documents; "
        "serve: the search tool of groove-tui serve over stdio against Engine.search in-process; "
        "soak: the resident memory of groove-tui serve --http under --soak-clients clients' mixed requests; "
        "watch: a real watcher over a copy of the KB (to --scale N chunks, hashing-384 unless --model): "
        "save to found, idle CPU, a burst's batches; "
        "peers: groove-tui's full-text legs beside tantivy and bm25s on the KB and the --queries golden file "
        "(nDCG@10, p50 / p95, index time and size, each as a ratio; needs the bench extra)",
    )
    be.add_argument(
        "--reranker", default=None, help="rerank mode: the reranker (default [reranker] model or ms-marco-l12)"
    )
    be.add_argument("--rerank-queries", type=int, default=30, help="rerank mode: how many of the queries (default 30)")
    be.add_argument(
        "--rerank-pool", type=int, default=None, metavar="N", help="rerank mode: the pool (default [reranker] pool)"
    )
    be.add_argument("--rerank-max-tokens", type=int, default=None, metavar="N", help="rerank mode: tokens per pair")
    be.add_argument("--rerank-threads", type=int, default=None, metavar="N", help="rerank mode: ONNX threads")
    be.add_argument("--soak-clients", type=int, default=8, metavar="N", help="soak mode: clients at once (default 8)")
    be.add_argument(
        "--soak-requests", type=int, default=2000, metavar="N", help="soak mode: requests per client (default 2000)"
    )
    be.add_argument("--docs", type=int, default=300, help="index and readers modes: documents in the subset (0 = all)")
    be.add_argument(
        "--scale",
        type=int,
        metavar="N",
        help="instead of --mode: replicate the KB to >= N chunks in a "
        "temporary KB and index (hashing-384 embedder unless --model; --index-dir unused) and time search",
    )
    be.add_argument("--saves", type=int, default=30, help="watch mode: notes saved and searched for (default 30)")
    be.add_argument(
        "--idle-seconds", type=float, default=10.0, help="watch mode: how long idle CPU is measured (default 10)"
    )
    be.add_argument("--burst", type=int, default=1000, help="watch mode: files written in the burst (default 1000)")
    be.add_argument(
        "--scale-dir",
        metavar="DIR",
        default=None,
        help="scale and watch modes: keep the synthesised KB and index in "
        "DIR and reuse them on the next run (default: a temporary directory, removed)",
    )

    st = sub.add_parser("status", help="what the index holds")
    _common(st)
    st.add_argument("--format", choices=("text", "json"), default="text")

    cf = sub.add_parser("config", help="the effective configuration")
    cf_sub = cf.add_subparsers(dest="config_command", metavar="ACTION", required=True)
    cs = cf_sub.add_parser("show", help="every setting with where it came from (default, groove.toml, flag)")
    cs.add_argument("--config", help="groove.toml to use (default: $GROOVE_TUI_CONFIG, ./groove.toml, user config)")
    cs.add_argument("--model", help="embedding model (overrides [embedding] model)")
    cs.add_argument(
        "--format",
        choices=("text", "json", "toml"),
        default="text",
        help="toml: the ranking settings as a groove.toml fragment",
    )
    _pipeline_flags(cs)

    _models_parser(sub)
    return parser


def _models_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list, pull, remove the embedders and rerankers groove-tui knows")
    p.add_argument("--model-dir", help="where pulled models live (default: $GROOVE_TUI_MODEL_DIR or the user data dir)")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION")
    ls = msub.add_parser("list", help="every known model: languages, size, licence, source, installed or not")
    ls.add_argument("--format", choices=("text", "json"), default="text")
    pl = msub.add_parser("pull", help="install a model (SHA-256 verified; idempotent)")
    pl.add_argument("name")
    pl.add_argument("--force", action="store_true", help="fetch again even when a verified copy is installed")
    pl.add_argument("--quiet", action="store_true", help="no progress bar")
    rm = msub.add_parser("remove", help="delete a pulled model")
    rm.add_argument("name")
    pa = msub.add_parser("path", help="print where a model is installed")
    pa.add_argument("name")


class _VersionAction(argparse.Action):
    """--version, read from the installed distribution only when asked (importlib.metadata costs ~60 ms)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kwargs: object) -> NoReturn:
        print(_version())  # on stdout, as argparse's own version action prints it
        parser.exit()


def _version() -> str:
    from groove_tui import __version__

    return f"groove-tui {__version__}"


def _share(text: str) -> float:
    """--embedded-share: a fraction from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is invalid: expected a number from 0 to 1")
    return value


# Each command is a module of groove_tui.commands with `run(args) -> int`, imported only when it runs.
HANDLERS = {
    "open": "open",
    "index": "index",
    "search": "search",
    "serve": "serve",
    "eval": "eval",
    "sweep": "sweep",
    "config": "config",
    "bench": "bench.command",
    "status": "status",
    "models": "models",
    "demo": "demo",
}


def main(argv: list[str] | None = None) -> int:
    # Query embeddings are small matrix products: BLAS threads only oversubscribe the two cores we share
    # with SQLite and the UI (measured: a USE query took 2-270 ms with threads, 2.5-7 ms without).
    # Must be set before numpy is imported; an explicit user setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    # `groove-tui KB [options]` is `groove-tui open KB [options]`, unless KB is no directory and looks
    # like a mistyped command (`serach`), which would otherwise be reported as a missing KB.
    if argv and not argv[0].startswith("-") and argv[0] not in (*COMMANDS, "open"):
        typo = _command_typo(argv[0])
        if typo is not None:
            print(f"groove-tui: unknown command {argv[0]!r} — did you mean {typo!r}?", file=sys.stderr)
            return 2
        argv.insert(0, "open")
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            parser.error("unrecognized arguments: " + " ".join(extra))
    except _ParseError as exc:
        return _usage_error(parser, argv, exc)
    if args.command is None:
        parser.print_help()
        return 0
    args.argv = tuple(argv)  # the command line as given, for --record
    if getattr(args, "model_dir", None):
        # the engine finds pulled models through the environment, like the index directory
        from groove_tui.settings.paths import MODEL_DIR_ENV

        os.environ[MODEL_DIR_ENV] = str(Path(args.model_dir).expanduser())
    try:
        code = importlib.import_module(f"groove_tui.commands.{HANDLERS[args.command]}").run(args)
        sys.stdout.flush()  # a reader that went away shows here, not in the interpreter's exit
        return code
    except BrokenPipeError:
        return _closed_stdout()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except CLIError as exc:
        return _fail(str(exc), exc.code)
    except ValueError as exc:  # ConfigError, QueryError, FilterError, GoldenError: user-facing messages
        return _fail(str(exc))
    except Exception as exc:
        from groove_tui.engine.errors import EngineError

        damaged = _damaged_index(args, exc)
        if damaged is not None:
            return _fail(damaged)
        if isinstance(exc, EngineError) or type(exc).__name__ == "ModelUnavailable":
            return _fail(str(exc))
        if isinstance(exc, OSError):  # a file system refusal the engine did not word: still one line
            where = f" ({exc.filename})" if exc.filename else ""
            return _fail(f"{exc.strerror or exc}{where}")
        raise


def _damaged_index(args: argparse.Namespace, exc: Exception) -> str | None:
    """When a command failed on a damaged index: one line that says so and gives the command that builds
    it again from the KB. SQLite names most damage itself; an unexpected failure of a command over an
    index is checked against the file (SQLite's quick_check), so damage it read as rows is named too."""
    from groove_tui.engine import DB_NAME
    from groove_tui.engine.errors import EngineError, IndexDamaged
    from groove_tui.engine.index import damage
    from groove_tui.output.textout import index_command
    from groove_tui.settings.paths import index_dir_for

    kb = getattr(args, "kb", None)
    where: object
    detail: str | None
    if isinstance(exc, IndexDamaged):
        where, detail = exc.db_path, exc.detail
    elif kb is None or (isinstance(exc, EngineError) and not damage.is_damage(exc)):
        return None
    else:
        try:
            where = db = index_dir_for(Path(kb), getattr(args, "index_dir", None)) / DB_NAME
        except (OSError, ValueError):
            return None
        detail = str(exc).splitlines()[0] if damage.is_damage(exc) else damage.check(db)
        if detail is None:
            return None
    fix = index_command(args, kb, "--force") if kb is not None else "groove-tui index KB --force"
    return f"the index {where} is damaged ({detail}); the KB is untouched, build the index again from it: {fix}"


def _fail(message: str, code: int = 1) -> int:
    """An error on stderr as one line, exit status `code` (1; 2 for a usage error). Messages echo paths (a
    KB, an index, a golden file) whose names may hold a newline or a bidi control such as U+202E: they are
    shown as escapes, as `status` shows them, so a name can neither forge a line nor reverse the text
    after it."""
    from groove_tui.output.textout import escape_name

    print(f"groove-tui: {escape_name(message)}", file=sys.stderr)
    return code


def _usage_error(parser: argparse.ArgumentParser, argv: list[str], exc: _ParseError) -> int:
    """argparse's usage and message (exit 2), or one line with a suggestion for a mistyped option."""
    words = (
        exc.message.split(": ", 1)[1].split()
        if exc.message.startswith("unrecognized arguments")
        else [w for w in argv if w.startswith("-") and w.split("=", 1)[0] not in _options_of(exc.parser)]
    )
    hint = _unknown_option(parser, argv, words)
    if hint is not None:
        print(f"{_command_parser(parser, argv).prog}: {hint}", file=sys.stderr)
        return 2
    exc.parser.print_usage(sys.stderr)
    message = exc.message
    choice = re.match(r"argument (\S+): invalid choice: '(.*)' \(choose from (.*)\)$", message)
    if choice:
        guess = _closest(choice.group(2), re.findall(r"'([^']*)'", choice.group(3)))
        if guess:
            message += f" — did you mean {guess!r}?"
    if "required: query" in message and any(w.startswith("-") for w in words):
        message += " (a query that starts with '-' goes after --: groove-tui search KB -- '-word')"
    print(f"{exc.parser.prog}: error: {message}", file=sys.stderr)
    return 2


def _closed_stdout() -> int:
    """The reader went away (`… | head -0`): stop quietly, as Unix tools do (128 + SIGPIPE).

    stdout is pointed at /dev/null first, so the interpreter's final flush has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


if __name__ == "__main__":
    sys.exit(main())
