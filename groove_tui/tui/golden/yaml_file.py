"""Judgments written into the user's own golden YAML, in place (ruamel.yaml round trip): the file's
comments, key order, quoting and indentation stay; only the judged entries change. A new file is written
by `engine.eval.save_golden` in groove's golden format instead.

The judgments use the same groove-compatible forms as that format: a grade is a `# grade: N` comment on
the entry's `path` line (or its `grade:` key, if the file already uses one), a grade-0 judgment a
`# judged-0: {"path": …, "heading": …}` comment line inside the query's block.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedBase, CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark, YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString
from ruamel.yaml.tokens import CommentToken
from ruamel.yaml.util import load_yaml_guess_indent

from groove_tui.engine.evaluate.golden import GoldenError, default_query_id

Judgment = tuple[str, str, "str | None", int]  # query text, path, heading, grade 0-3

_GRADE = re.compile(r"(#\s*grade:\s*)([0-3])")
_JUDGED = re.compile(r"^\s*#\s*judged-0:\s*(.*?)\s*$")


def _yaml(text: str) -> YAML:
    try:
        _data, indent, offset = load_yaml_guess_indent(text)
    except YAMLError:
        indent, offset = 4, 2
    y = YAML()  # round trip
    y.preserve_quotes = True
    y.width = 1 << 16  # never fold a long line the user wrote on one
    y.indent(mapping=2, sequence=indent or 4, offset=offset if offset is not None else 2)
    return y


def apply_judgments(text: str, judgments: Iterable[Judgment], source: str = "golden file") -> str:
    """`text` (a golden YAML file) with `judgments` applied in order, everything else as it was."""
    y = _yaml(text)
    try:
        data = y.load(text)
    except YAMLError as exc:
        raise GoldenError(source, None, f"cannot edit it in place: {exc}") from None
    if not isinstance(data, CommentedMap):
        raise GoldenError(source, None, "cannot edit it in place: the top level is not a mapping")
    queries = data.get("queries")
    if queries is None:
        queries = data["queries"] = CommentedSeq()
    if not isinstance(queries, CommentedSeq):
        raise GoldenError(source, None, "cannot edit it in place: 'queries' is not a list", "queries")
    for query, path, heading, grade in judgments:
        _judge(queries, query, path, heading, grade)
    out = io.StringIO()
    y.dump(data, out)
    return out.getvalue()


def _judge(queries: CommentedSeq, query: str, path: str, heading: str | None, grade: int) -> None:
    q = next((m for m in queries if isinstance(m, CommentedMap) and m.get("query") == query), None)
    if q is None:
        q = CommentedMap()
        q["id"] = DoubleQuotedScalarString(default_query_id(query))
        q["query"] = DoubleQuotedScalarString(query)
        q["expected"] = CommentedSeq()
        _append(queries, q)
    expected = q.get("expected")
    if not isinstance(expected, CommentedSeq):
        expected = q["expected"] = CommentedSeq()
    _drop_judged_comments(q, path, heading)
    matches = [i for i, e in enumerate(expected) if isinstance(e, CommentedMap) and _same(e, path, heading)]
    if grade == 0:
        for i in reversed(matches):
            del expected[i]
        _add_judged_comment(q, path, heading)
        return
    if not matches:
        entry = CommentedMap()
        entry["path"] = DoubleQuotedScalarString(path)
        if heading is not None:
            entry["heading"] = DoubleQuotedScalarString(heading)
        entry.yaml_add_eol_comment(f"# grade: {grade}", "path")
        _append(expected, entry)
        return
    for i in matches:
        entry = expected[i]
        if "grade" in entry:  # the file already uses the (non-groove) key: keep its form
            entry["grade"] = grade
            continue
        token = _eol_token(entry, "path")
        if token is not None and _GRADE.search(token.value.split("\n", 1)[0]):
            first, sep, rest = token.value.partition("\n")
            token.value = _GRADE.sub(lambda m: m.group(1) + str(grade), first, count=1) + sep + rest
        elif token is not None and token.value.lstrip().startswith("#"):  # the user's own comment: add to it
            first, sep, rest = token.value.partition("\n")
            token.value = f"{first}  # grade: {grade}{sep}{rest}"
        else:
            entry.yaml_add_eol_comment(f"# grade: {grade}", "path")


def _append(seq: CommentedSeq, item: CommentedMap) -> None:
    """Append `item`; the comment lines and blank lines that followed the old last item (the parser keeps
    them on its last value) move after the new one, so they still close the block."""
    tail = ""
    if len(seq):
        spot = _last_value(seq[-1])
        token = _eol_token(*spot) if spot else None
        if token is not None and "\n" in token.value:
            first, tail = token.value.split("\n", 1)
            token.value = first + "\n"
    seq.append(item)
    if not tail:
        return
    spot = _last_value(item)
    assert spot is not None  # a query entry always ends in a scalar
    node, key = spot
    token = _eol_token(node, key)
    if token is None:
        node.ca.items[key] = [None, None, CommentToken("\n" + tail, CommentMark(0), None), None]
    else:
        token.value = token.value.rstrip("\n") + "\n" + tail


def _last_value(node: Any) -> tuple[Any, Any] | None:
    """(container, key) of the last scalar written under `node`: where the parser hangs what follows."""
    if isinstance(node, CommentedMap) and node:
        key = list(node.keys())[-1]
        value = node[key]
        if isinstance(value, (CommentedMap, CommentedSeq)) and value:
            return _last_value(value)
        return node, key
    if isinstance(node, CommentedSeq) and node:
        value = node[-1]
        if isinstance(value, (CommentedMap, CommentedSeq)) and value:
            return _last_value(value)
        return node, len(node) - 1
    return None


def _same(entry: CommentedMap, path: str, heading: str | None) -> bool:
    if entry.get("path") != path:
        return False
    h = entry.get("heading")
    if h is None or heading is None:
        return h is None and heading is None
    return str(h).strip().lower() == heading.strip().lower()


def _eol_token(node: CommentedBase, key: Any) -> CommentToken | None:
    item = node.ca.items.get(key)
    where = 0 if isinstance(node, CommentedSeq) else 2  # a list item's comment sits first, a key's third
    if item and len(item) > where and isinstance(item[where], CommentToken):
        return item[where]
    return None


def _judged_line(path: str, heading: str | None) -> str:
    return "judged-0: " + json.dumps({"path": path, "heading": heading}, ensure_ascii=False)


def _add_judged_comment(q: CommentedMap, path: str, heading: str | None) -> None:
    """A whole-line comment before the query's `expected` key (inside its block, where the loader
    looks), indented like its keys."""
    column = getattr(q.lc, "col", None)
    if not isinstance(column, int) or column < 0:
        column = 4
    if q.lc.data and "expected" in q.lc.data:  # a key read from the file: its own column
        column = q.lc.data["expected"][1]
    q.yaml_set_comment_before_after_key("expected", before=_judged_line(path, heading), indent=column)


def _drop_judged_comments(node: Any, path: str, heading: str | None) -> None:
    """Remove every judged-0 comment line for (path, heading) under `node` (re-judging replaces it)."""
    for token in _comment_tokens(node):
        lines = token.value.split("\n")
        kept = [ln for ln in lines if not _judges(ln, path, heading)]
        if len(kept) != len(lines):
            token.value = "\n".join(kept)


def _judges(line: str, path: str, heading: str | None) -> bool:
    m = _JUDGED.match(line)
    if not m:
        return False
    payload = m.group(1)
    if payload.startswith("{"):
        try:
            obj = json.loads(payload)
        except ValueError:
            return False
        target = (obj.get("path"), obj.get("heading")) if isinstance(obj, dict) else (None, None)
    else:
        p, sep, h = payload.partition("#")
        target = (p, h if sep else None)
    if target[0] != path:
        return False
    if target[1] is None or heading is None:
        return target[1] is None and heading is None
    return str(target[1]).strip().lower() == heading.strip().lower()


def _comment_tokens(node: Any):
    if isinstance(node, CommentedBase):
        ca = node.ca
        for part in ca.comment or []:
            yield from _tokens_in(part)
        for value in ca.items.values():
            for part in value or []:
                yield from _tokens_in(part)
        children = node.values() if isinstance(node, CommentedMap) else node if isinstance(node, CommentedSeq) else ()
        for child in children:
            yield from _comment_tokens(child)


def _tokens_in(part: Any):
    if isinstance(part, CommentToken):
        yield part
    elif isinstance(part, list):
        for p in part:
            yield from _tokens_in(p)
