"""What a client sees: groove's tool names, argument names, limits and error texts, the `kb://` URIs, and
the four prompts (groove-tui's own words, groove's names and arguments).

Arguments are checked before any engine work, in two steps. First their shape, which groove leaves to
its deserialiser: a name the tool does not take, or a value of the wrong JSON type, is refused with the
argument, the value and what it takes (groove ignores unknown names; a misspelt `limt` then silently
means the default, so it is refused here, with the closest name). `null` means "not given", as in
groove. Then each tool's own checks, in groove's order with groove's messages (`kb.search`).
"""

from __future__ import annotations

import difflib
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

# groove's limits (server/search.rs, server/documents.rs, graph.rs)
SEARCH_LIMIT_DEFAULT = 5
SEARCH_LIMIT_MAX = 1000  # clamped, not refused
SEARCH_QUERY_MAX_BYTES = 1024
FILTER_LIST_MAX_ITEMS = 64
FILTER_ITEM_MAX_BYTES = 1024
DOCUMENT_MAX_BYTES = 1024 * 1024  # a text document larger than this is neither served nor offered
# An answer travels as a JSON string inside the JSON-RPC message, and the official SDK's HTTP client refuses
# a message over 1 MiB: a search answer is held well under it, a hit's content cut past its own share.
ANSWER_MAX_BYTES = 768 * 1024  # the answer's text as it travels (escaped inside the message)
HIT_CONTENT_MAX_BYTES = 64 * 1024  # one hit's content (a whole-document expansion, an unsplit note)
TOPIC_PAGE_SIZE = 100  # documents per read of a topic group: one read stays a few thousand tokens
GRAPH_DEFAULT_DEPTH, GRAPH_MAX_DEPTH = 2, 3
GRAPH_DEFAULT_FAN_OUT, GRAPH_MAX_FAN_OUT = 5, 20
GRAPH_DEFAULT_MIN_SIMILARITY = 0.3
GRAPH_DEFAULT_MAX_NODES, GRAPH_MAX_NODES = 100, 2000
GRAPH_DEFAULT_MAX_SEED_CHUNKS, GRAPH_MAX_SEED_CHUNKS = 32, 1000
SEED_STRATEGIES = {"all-chunks": "all_chunks", "all_chunks": "all_chunks", "centroid": "centroid"}

TOPIC_PREFIX = "kb://topic/"
DOC_PREFIX = "kb://doc/"
DOC_TEMPLATE = DOC_PREFIX + "{path}"


class ArgumentError(ValueError):
    """A tool argument of the wrong name or type: answered as `{"error": …}`, never a traceback."""


# ---------------------------------------------------------------- tool schemas

_STR, _INT, _NUM, _BOOL, _STRS = "string", "integer", "number", "boolean", "strings"


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # one of the five above
    description: str
    required: bool = False

    def schema(self) -> dict[str, Any]:
        if self.kind == _STRS:
            out: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
        else:
            out = {"type": self.kind}
        if self.kind == _INT:
            out["minimum"] = 0
        out["description"] = self.description
        return out


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: tuple[Arg, ...]
    read_only: bool = True

    def input_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {a.name: a.schema() for a in self.args},
            "required": [a.name for a in self.args if a.required],
        }

    def check(self, arguments: Any) -> dict[str, Any]:
        """The arguments given (None values dropped), or ArgumentError naming the first wrong one."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ArgumentError(f"{self.name}: the arguments must be a JSON object, not {_kind(arguments)}")
        known = {a.name: a for a in self.args}
        for key in arguments:
            if key not in known:
                guess = difflib.get_close_matches(key, list(known), n=1, cutoff=0.6)
                hint = f" — did you mean {guess[0]!r}?" if guess else ""
                accepted = ", ".join(known) if known else "none"
                raise ArgumentError(f"{self.name}: unknown argument {key!r}{hint} (it takes: {accepted})")
        out: dict[str, Any] = {}
        for arg in self.args:
            value = arguments.get(arg.name)
            if value is None:
                if arg.required:
                    raise ArgumentError(f"{self.name}: {arg.name} is required ({_expected(arg.kind)})")
                continue
            if not _fits(arg.kind, value):
                raise ArgumentError(
                    f"{self.name}: {arg.name} = {_show(value)} is invalid: expected {_expected(arg.kind)}"
                )
            out[arg.name] = float(value) if arg.kind == _NUM else value
        return out


def _fits(kind: str, value: Any) -> bool:
    if kind == _STR:
        return isinstance(value, str)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _INT:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == _NUM:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _expected(kind: str) -> str:
    return {
        _STR: "a string",
        _BOOL: "true or false",
        _INT: "an integer >= 0",
        _NUM: "a number",
        _STRS: "an array of strings",
    }[kind]


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(type(value), "a number")


def _show(value: Any) -> str:
    """A value as the client sent it (JSON), cut short: an error line must stay one line."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


SEARCH = ToolSpec(
    "search",
    "Hybrid search (vector + full text, fused) over the knowledge base, with the ranking settings the server "
    "was started with (groove.toml, the settings saved from the explorer, its flags). Returns JSON "
    "{results, low_confidence, filter_applied}; each result has score, path, title, heading, topic, date, "
    "tags, content, match_spans (byte offsets into content) when computed, expanded_from when the parent "
    "retriever widened it, and uri (kb://doc/…) when the document can be read as a resource. Quote a phrase to "
    'require it verbatim ("Foundry Local" setup); a leading - excludes a word.',
    (
        Arg("query", _STR, "The search query (at most 1024 bytes)", required=True),
        Arg("limit", _INT, "Maximum number of results (default 5; at most 1000 are returned)"),
        Arg("category", _STR, "Only documents whose first path segment is this"),
        Arg("topic", _STR, "Only documents of this topic (frontmatter topic, else the second path segment)"),
        Arg("rerank", _BOOL, "Override the server's default for the cross-encoder (needs a configured reranker)"),
        Arg("min_quality", _NUM, "Quality threshold for this query (0.0-1.0); the server default when omitted"),
        Arg("include_low_quality", _BOOL, "true: no quality filter for this query (same as min_quality 0)"),
        Arg(
            "path_globs", _STRS, 'Glob patterns over KB paths; a leading ! excludes, e.g. ["docs/**", "!docs/draft/**"]'
        ),
        Arg("tags_any", _STRS, "Documents carrying any of these tags"),
        Arg("tags_all", _STRS, "Documents carrying all of these tags"),
        Arg("date_from", _STR, "Frontmatter date >= this (YYYY-MM-DD)"),
        Arg("date_to", _STR, "Frontmatter date <= this (YYYY-MM-DD)"),
        Arg("min_confidence_ratio", _NUM, "low_confidence threshold (max/mean score); 0 disables"),
        Arg("mmr", _BOOL, "MMR diversity re-rank on or off for this call"),
        Arg("mmr_lambda", _NUM, "MMR relevance weight in [0, 1] (1 = MMR off)"),
        Arg("mmr_same_doc_penalty", _NUM, "MMR extra cost for a second chunk of the same document, in [0, 1]"),
        Arg("parent_retriever", _BOOL, "Widen short hits to their neighbours or whole document"),
    ),
)
LIST_TOPICS = ToolSpec("list_topics", "List all indexed topics and categories with document counts.", ())
GET_DOCUMENT = ToolSpec(
    "get_document",
    "Get the full content and metadata of a document by its path relative to the knowledge base.",
    (Arg("path", _STR, 'Relative path of the document (e.g. "deep-dive/mcp/overview.md")', required=True),),
)
REBUILD_INDEX = ToolSpec(
    "rebuild_index",
    "Bring the search index up to date with the Markdown files of the knowledge base (force: rebuild from "
    "scratch). One at a time: a call while a rebuild runs is refused, saying how long it has run. Searches "
    "keep answering from the last committed state meanwhile.",
    (Arg("force", _BOOL, "Rebuild from scratch, ignoring what is already indexed (default false)"),),
    read_only=False,
)
GET_CONNECTION_GRAPH = ToolSpec(
    "get_connection_graph",
    "Walk from a document to semantically related chunks (breadth first, by vector similarity). Returns a "
    "flat list of nodes with parent_id / depth / score / snippet, plus truncated / truncation[] when a bound "
    "cut the walk short.",
    (
        Arg("start", _STR, "Relative path of the indexed document to start from", required=True),
        Arg("depth", _INT, "Hops from the start (default 2; more than 3 is read as 3)"),
        Arg("fan_out", _INT, "Neighbours followed per node (default 5; more than 20 is read as 20)"),
        Arg("min_similarity", _NUM, "Minimum cosine similarity of a neighbour, 0.0-1.0 (default 0.3)"),
        Arg("seed_strategy", _STR, '"all_chunks" (default; "all-chunks" too) or "centroid"'),
        Arg("category", _STR, "Only nodes in this category"),
        Arg("topic", _STR, "Only nodes of this topic"),
        Arg("exclude_paths", _STRS, "Paths to leave out (the start is always left out)"),
        Arg("dedup_by_path", _BOOL, "At most one node per document (default false)"),
        Arg("max_nodes", _INT, "Nodes in the graph at most (default 100; more than 2000 is read as 2000)"),
        Arg(
            "max_seed_chunks",
            _INT,
            "Chunks of the start document used as seeds (default 32; more than 1000 is read as 1000)",
        ),
    ),
)
TOOLS: dict[str, ToolSpec] = {
    t.name: t for t in (SEARCH, LIST_TOPICS, GET_DOCUMENT, REBUILD_INDEX, GET_CONNECTION_GRAPH)
}


# ---------------------------------------------------------------- kb:// URIs

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


def encode_path(path: str) -> str:
    """groove's encoding: unreserved bytes and '/' kept, every other byte %XX (upper-case hex)."""
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in path.encode("utf-8"))


def doc_uri(path: str) -> str:
    return DOC_PREFIX + encode_path(path)


def topic_uri(prefix: str) -> str:
    return TOPIC_PREFIX + encode_path(prefix)


def group_prefix(path: str) -> str:
    """A document's topic group: its first one or two folders ('' for a file at the top)."""
    parts = [p for p in path.split("/") if p]
    if len(parts) <= 1:
        return ""
    return parts[0] if len(parts) == 2 else f"{parts[0]}/{parts[1]}"


def _decode(text: str) -> str | None:
    out = bytearray()
    i = 0
    raw = text.encode("utf-8")
    while i < len(raw):
        if raw[i] == 0x25:  # '%'
            hexpart = raw[i + 1 : i + 3]
            if len(hexpart) != 2 or not all(c in b"0123456789abcdefABCDEF" for c in hexpart):
                return None
            out.append(int(hexpart, 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:
        return None


def split_page(uri: str) -> tuple[str, int | None]:
    """A topic group URI without its `?page=N` and N (1 without one; None when the query is not a page
    number). Paths never hold a raw '?' (encode_path writes %3F), so the first one starts the query."""
    if not uri.startswith(TOPIC_PREFIX) or "?" not in uri:
        return uri, 1
    base, _sep, query = uri.partition("?")
    number = query.removeprefix("page=")
    return base, int(number) if query.startswith("page=") and number.isascii() and number.isdigit() else None


def page_uri(prefix: str, page: int) -> str:
    return topic_uri(prefix) + (f"?page={page}" if page > 1 else "")


def parse_uri(uri: str) -> tuple[str, str] | None:
    """("doc", path) or ("topic", prefix) for a URI this server serves; None for anything else, including
    a traversal however it is spelled (decoded first, so %2e%2e%2f is seen as ../)."""
    if uri.startswith(DOC_PREFIX):
        kind, rest = "doc", uri[len(DOC_PREFIX) :]
    elif uri.startswith(TOPIC_PREFIX):
        kind, rest = "topic", uri[len(TOPIC_PREFIX) :]
    else:
        return None
    decoded = _decode(rest)
    if decoded is None or "\0" in decoded or "\\" in decoded or decoded.startswith("/"):
        return None
    if any(seg == ".." for seg in decoded.split("/")):
        return None
    if kind == "doc":
        return ("doc", decoded) if decoded else None
    return "topic", decoded.rstrip("/")


# ---------------------------------------------------------------- prompts


@dataclass(frozen=True)
class PromptSpec:
    name: str
    description: str
    arguments: tuple[tuple[str, str, bool], ...]  # (name, description, required)


PROMPTS: dict[str, PromptSpec] = {
    p.name: p
    for p in (
        PromptSpec(
            "summarize_topic",
            "Summarize what the knowledge base holds on a topic, citing the documents used.",
            (("topic", "The topic to summarize (as list_topics names it)", True),),
        ),
        PromptSpec(
            "deep_dive",
            "Answer a question from the knowledge base, following related documents before answering.",
            (("question", "The question to answer", True),),
        ),
        PromptSpec(
            "whats_new",
            "Survey the documents dated since a day, and say what that date does and does not mean.",
            (("since", "YYYY-MM-DD (default: 30 days ago)", False),),
        ),
        PromptSpec(
            "find_gaps",
            "Find what the knowledge base does not cover, or covers thinly.",
            (("topic", "Limit the survey to this topic", False),),
        ),
    )
}

_CITE = (
    "How to answer:\n"
    "- Name the `path` of every document you rely on, and only documents you actually opened.\n"
    "- Open a document with `get_document` before you say anything about it, even to set it aside: a "
    "search result is one excerpt, and the rest of the document may say the opposite.\n"
    "- When a search answer has `low_confidence: true`, tell the reader the knowledge base may not cover "
    "the question well instead of answering as if it did.\n"
    "- Where the knowledge base is silent, say so. Anything you add from general knowledge must be marked "
    "as coming from outside it."
)


def prompt_text(name: str, args: dict[str, str], today: datetime | None = None) -> str:
    """The one user message of prompt `name` (its required arguments checked by the caller)."""
    if name == "summarize_topic":
        topic = args["topic"]
        return (
            f"Write a summary of what this knowledge base says about `{topic}`.\n\n"
            f"1. Call `list_topics` and check that `{topic}` is there and how many documents it has. If it is "
            "not, say so and suggest the nearest topics rather than guessing.\n"
            f'2. Call `search` with `topic: "{topic}"`, a query that describes the topic and a `limit` of about '
            "15. The results are the best-ranked chunks, not every chunk.\n"
            "3. Read the documents that matter most in full with `get_document`.\n\n"
            f"Then summarize: what the knowledge base establishes about `{topic}`, where its documents "
            "disagree, and what it leaves out.\n\n" + _CITE
        )
    if name == "deep_dive":
        question = args["question"]
        return (
            f"Answer from the knowledge base: {question}\n\n"
            "One search is not enough for this.\n"
            "1. `search` with the question as the query.\n"
            "2. For the one or two best hits, call `get_connection_graph` with their path as `start` and "
            "`depth: 2`: it finds neighbouring material the wording of the question did not match, which is "
            "often where the answer is.\n"
            "3. `get_document` the documents that count, so the answer rests on whole documents.\n"
            "4. When the graph turned up new vocabulary, `search` again with it.\n\n" + _CITE
        )
    if name == "whats_new":
        since = args.get("since") or ((today or datetime.now(UTC)) - timedelta(days=30)).strftime("%Y-%m-%d")
        return (
            f"Report what this knowledge base has gained since {since}.\n\n"
            f'1. `search` with `date_from: "{since}"`, a broad query and a high `limit`; repeat with a few '
            "other queries, since the date only narrows the candidates and the query still ranks them.\n"
            "   `date_from` must be a date such as 2024-05-01 (YYYY-MM-DD); convert the value above if it is "
            "written another way.\n"
            "2. Run at least one of those searches again with `include_low_quality: true`: short notes and "
            "stubs are filtered out by default, and they are much of what is new.\n"
            "3. Group what you found by `topic` and `category`.\n"
            "4. `get_document` every document you will list, stubs included (a stub is worth reporting as "
            "a stub).\n\n"
            "Say in the answer what the date means: it is the `date` an author wrote in the frontmatter, not "
            "when the file changed or was indexed. A note edited yesterday with an old date is missed, a "
            "back-dated note is missed too; present the survey as the approximation it is.\n\n" + _CITE
        )
    if name == "find_gaps":
        only = args.get("topic")
        scope = f"the topic `{only}`" if only else "this knowledge base"
        narrow = (
            f'Pass `topic: "{only}"` on every search below, the `include_low_quality` ones included: an '
            "answer from another topic would hide the gap.\n"
            if only
            else ""
        )
        return (
            f"Find what {scope} does not cover, or covers thinly. Report absences; do not write the missing "
            "content.\n\n"
            + narrow
            + "1. List the questions a reader would expect answered here (use `list_topics` to see the shape "
            "of the knowledge base), and `search` each.\n"
            "2. A search answering with `low_confidence: true`, or with hits that do not address the "
            "question, marks a gap.\n"
            "3. Search the weak spots again with `include_low_quality: true`: a topic that shows up only "
            "that way is covered by stubs and drafts.\n"
            "4. `get_document` what you cite, to tell a thin document from a thin excerpt.\n\n"
            "List each gap with the searches that show it.\n\n" + _CITE
        )
    raise KeyError(name)
