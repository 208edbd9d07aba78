"""Which embedder a KB gets when the user names none, and the one-line notes that explain the choice.

multilingual-e5-small (int8) is the default: it serves Japanese and English. On a KB with no CJK text the
English bge-small-en ranks better (docs/evaluation.md), so once it is pulled a fresh index
of such a KB uses it; the choice is recorded in the index like any model, and said. A later document in
a script the chosen model does not read is then a warning, not a silent loss.
"""

from __future__ import annotations

import re

from groove_tui.engine.analysis.scripts import scripts_covered
from groove_tui.engine.index.store import Store
from groove_tui.engine.models.catalog import find_spec, installed_dir, pull_command
from groove_tui.engine.models.embedders import E5_INT8_ID

ENGLISH_MODEL = "bge-small-en"
# Han, kana and Hangul: the scripts an English-only embedder cannot read
_CJK = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]")
_EXAMPLES = 3


def cjk_documents(store: Store, since: str | None = None) -> tuple[int, list[str]]:
    """How many documents (indexed at or after `since`, an index timestamp) have CJK text, and the
    first few paths. Stops reading a document at its first CJK character."""
    sql = (
        "SELECT d.path, c.heading, c.content FROM chunks c JOIN documents d ON d.id = c.document_id"
        + (" WHERE d.last_indexed >= ?" if since else "")
        + " ORDER BY d.id"
    )
    found: dict[str, None] = {}
    for path, heading, content in store.conn().execute(sql, (since,) if since else ()):
        if path not in found and (_CJK.search(content or "") or _CJK.search(heading or "")):
            found[path] = None
    return len(found), list(found)[:_EXAMPLES]


def reads_cjk(model_id: str) -> bool:
    spec = find_spec(model_id, "embedder")
    if spec is None:
        return True  # not ours to judge: a catalog name or a local directory
    covered = scripts_covered(spec.languages)
    return covered is None or "cjk" in covered


def english_model_pulled() -> bool:
    return installed_dir(ENGLISH_MODEL) is not None


def chosen_note() -> str:
    return (
        f"embedding model {ENGLISH_MODEL}: the KB has no CJK text and {ENGLISH_MODEL} is pulled (English, "
        f"ranks better than multilingual-e5-small there); [embedding] model or --model names another"
    )


def hint_note() -> str:
    return (
        f"hint: the KB has no CJK text: the English embedder {ENGLISH_MODEL} ranks such KBs better; "
        f"`{pull_command(ENGLISH_MODEL)}`, then re-index with --force to switch"
    )


def unread_script_note(model_id: str, count: int, examples: list[str]) -> str:
    shown = ", ".join(examples) + (", …" if count > len(examples) else "")
    return (
        f"warning: {count} document{'s' if count != 1 else ''} with CJK text ({shown}) embedded by the "
        f"English-only model {model_id}: their vector leg is weak; re-index with --model {E5_INT8_ID} --force"
    )
