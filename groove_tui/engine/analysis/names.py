"""How a query names a section: `heading_key` compares headings, titles and queries, `opening_h1` reads
the H1 a chunk opens with, and `name_keys` gives the keys a chunk is named by, which the index keeps in
its `named_keys` table so that the lookup is one indexed read (engine/retrieve/named.py)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

# A query longer than this is a passage, not a heading: no named-section lookup, and no key kept.
HEADING_KEY_MAX = 200

# What a kept key names: the chunk's heading, or the H1 its text opens with.
HEADING, OPENING_H1 = 0, 1

# The keys' form: an index whose named_keys were made another way (or not at all) is not read, and the
# next indexing run makes them again.
NAMES_VERSION = "1"

_EDGE_PUNCT = " \t\r\n.,:;!?¡¿-–—_*`'\"“”‘’()[]{}<>#=~|/\\。、．，：；！？「」『』（）【】"
ARTICLES = frozenset({"the", "a", "an"})


def heading_key(text: str) -> str:
    """How a heading, a title and a query compare: NFKC, case-folded, inner whitespace collapsed, Markdown
    emphasis and punctuation at either end dropped (a heading `tar:` in backticks names the same section as
    `tar`), and a leading English article too: "The parent retriever" is what "parent retriever" names."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split()).strip(_EDGE_PUNCT)
    head, _, rest = folded.partition(" ")
    return rest.strip(_EDGE_PUNCT) if head in ARTICLES and rest else folded


def opening_h1(content: str) -> str:
    """The text of the H1 a chunk opens with ("" when its first line is not one)."""
    first = content.lstrip().split("\n", 1)[0]
    return first[2:] if first.startswith("# ") else ""


def name_keys(rows: Iterable[tuple[Any, ...]]) -> Iterator[tuple[str, int, int]]:
    """(key, chunk id, HEADING or OPENING_H1) of (chunk id, heading, context, content) rows: every key a
    query could equal (not empty, at most HEADING_KEY_MAX characters)."""
    for cid, heading, _context, content in rows:
        for kind, text in ((HEADING, heading or ""), (OPENING_H1, opening_h1(content))):
            key = heading_key(text) if text else ""
            if key and len(key) <= HEADING_KEY_MAX:
                yield key, cid, kind
