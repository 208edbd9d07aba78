"""A pulled model folder run by ONNX Runtime directly, as fastembed runs it, without importing fastembed.

Loading a model through fastembed costs a process fastembed's import (~0.7 s: it brings huggingface_hub,
httpx and its image models) and ONNX Runtime's graph optimisation (~0.2 s for bge-small-en), more than
a one-shot search spends on everything else. Here both are paid once per model and machine. The first
load configures the tokenizer through fastembed's own `load_tokenizer` (truncation, padding, special
tokens) and saves it, and has ONNX Runtime save the graph it optimised; later loads read both back
(~0.1 s). The run is fastembed's for a custom model: input_ids, attention_mask and, where the graph
takes them, zero token_type_ids; the first output; CLS or masked-mean pooling; L2 normalisation; so the
vectors are fastembed's.

The prepared files live under the model root, in `.prepared/<folder>/<key>/`; the key covers the model
file's SHA-256, ONNX Runtime's version and the processor (an optimised graph may hold kernels chosen for
it). A prepared folder that cannot be written or read back is rebuilt from the model, never fatal.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from groove_tui.engine.models.catalog import PREPARED_DIR, Manifest, sha256_of
from groove_tui.engine.models.offline import ModelUnavailable, _config_hidden_size, onnx_dir_files
from groove_tui.engine.models.runtime import LaneSlot, bulk_lanes, quiet

TOKENIZER_FILE = "tokenizer.json"
GRAPH_FILE = "model.optimized.onnx"
# The optimised graph's weights, in a file of their own: ONNX Runtime reads them without parsing them as
# protobuf, which for a 34-98 MB model is most of what loading it costs.
GRAPH_DATA_FILE = "model.optimized.data"
INFO_FILE = "prepared.json"
PREPARED_FORMAT = 2  # bump when what is saved, or how it is read back, changes


def read_at_most(tokenizer: Any, tokens: int) -> None:
    """Have a `tokenizers` tokenizer cut every text after `tokens` tokens, its special tokens included, or
    at its own limit if that is lower."""
    own = (tokenizer.truncation or {}).get("max_length")
    tokenizer.enable_truncation(min(tokens, own) if own else tokens)


def processor_key() -> str:
    """What an optimised graph may depend on: the machine, and the processor's model and flags."""
    parts = [platform.machine()]
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(("model name", "flags")):
                parts.append(line)
            if line.strip() == "":  # the first processor says it for all
                break
    except OSError:  # no /proc: the platform's name for the processor (which runs `uname -p`, ~5 ms)
        parts.append(platform.processor())
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def prepared_key(digest: str) -> str:
    """The folder name for what loading a model file of this SHA-256 prepared, on this runtime and processor."""
    import onnxruntime as ort

    return hashlib.sha256(f"{PREPARED_FORMAT}|{digest}|{ort.__version__}|{processor_key()}".encode()).hexdigest()[:20]


def onnx_session(
    ort: Any,
    path: Path,
    *,
    optimised: bool,
    threads: int | None = None,
    inter_threads: int | None = None,
    save_to: Path | None = None,
) -> Any:
    """A quiet CPU session. ``optimised``: the graph is one this processor's ONNX Runtime already optimised;
    else it is optimised now and, with ``save_to``, saved there with its weights beside it."""
    options = quiet(ort.SessionOptions())
    if threads:
        options.intra_op_num_threads = threads
    if inter_threads:
        options.inter_op_num_threads = inter_threads
    if optimised:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    else:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if save_to is not None:
            options.optimized_model_filepath = str(save_to)
            options.add_session_config_entry("session.optimized_model_external_initializers_file_name", GRAPH_DATA_FILE)
            options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
            options.log_severity_level = 3  # not the warning that the graph suits this machine: it is keyed so
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def read_back(prepared: Path, open_graph: Callable[[Path | None], Any]) -> Any | None:
    """``open_graph`` of what was prepared: its optimised graph, or None when only the rest was saved (a model
    with external data is optimised anew each time). None when nothing was prepared or it cannot be read
    (then it is removed, to be prepared again)."""
    if not (prepared / INFO_FILE).is_file():
        return None
    graph = prepared / GRAPH_FILE
    try:
        return open_graph(graph if graph.is_file() else None)
    except Exception:  # damaged or from elsewhere
        shutil.rmtree(prepared, ignore_errors=True)
        return None


def prepare(prepared: Path, build: Callable[[Path | None], Any], info: dict[str, Any]) -> Any:
    """Run ``build(folder)``, which optimises the graph and saves what it prepares into ``folder``, in a hidden
    sibling of ``prepared`` renamed into place when done; returns what ``build`` returned. A model root that
    cannot be written gets ``build(None)``: the graph is optimised and nothing saved."""
    parent = prepared.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".partial-", dir=parent))
    except OSError:  # a read-only model root: run without saving
        return build(None)
    try:
        result = build(work)
        (work / INFO_FILE).write_text(json.dumps({"format": PREPARED_FORMAT, **info}), encoding="utf-8")
        with contextlib.suppress(OSError):  # another process prepared it first: theirs stays
            os.replace(work, prepared)
        _remove_older_formats(parent)
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _remove_older_formats(parent: Path) -> None:
    """What an earlier version prepared for this model: the current format never reads it."""
    for sibling in parent.iterdir():
        with contextlib.suppress(OSError, ValueError, AttributeError):
            info = json.loads((sibling / INFO_FILE).read_text(encoding="utf-8"))
            if int(info.get("format", 0)) < PREPARED_FORMAT:
                shutil.rmtree(sibling, ignore_errors=True)


class PreparedOnnxEmbedder:
    """An embedder for a model folder with a manifest (pooling, normalisation, prefixes), run as the
    module docstring says. Loads lazily: the first embedding builds or reads the prepared files."""

    def __init__(
        self, folder: Path, manifest: Manifest, *, model_id: str, threads: int | None = None, passage_tokens: int = 0
    ) -> None:
        self.folder = folder
        self.model_id = model_id
        self.query_prefix, self.passage_prefix = manifest.query_prefix, manifest.passage_prefix
        self._pooling, self._normalize = manifest.pooling, manifest.normalize
        self._model_file, extra = onnx_dir_files(folder, "[embedding] model")
        self._external_data = bool(extra)  # a graph with external data is optimised anew each time
        digest = manifest.files.get(self._model_file) or sha256_of(folder / self._model_file)
        self.prepared = folder.parent / PREPARED_DIR / folder.name / prepared_key(digest)  # in the model root
        self._threads = threads
        self._passage_tokens = passage_tokens
        self._lock = threading.Lock()
        self._loaded: tuple[Any, Any, frozenset[str]] | None = None
        self.lanes = LaneSlot()  # a long run's single-threaded sessions (prepare_for_bulk)
        hidden = _config_hidden_size(folder)
        self.dim = hidden or int(self.embed_query("dimension probe").shape[0])

    # ---------------------------------------------------------------- loading

    def _load(self) -> tuple[Any, Any, frozenset[str]]:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._open()
        return self._loaded

    def _open(self) -> tuple[Any, Any, frozenset[str]]:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        try:

            def open_prepared(graph: Path | None) -> tuple[Any, Any]:
                from concurrent.futures import ThreadPoolExecutor

                # Both read a file and build in native code: the tokenizer's JSON parses while ONNX Runtime,
                # which lets go of the interpreter, opens the graph.
                with ThreadPoolExecutor(1, thread_name_prefix="groove-tokenizer") as pool:
                    tokenizer = pool.submit(Tokenizer.from_file, str(self.prepared / TOKENIZER_FILE))
                    if graph is None:
                        session = self._session(ort, self.folder / self._model_file, optimised=False)
                    else:
                        session = self._session(ort, graph, optimised=True)
                    return tokenizer.result(), session

            loaded = read_back(self.prepared, open_prepared)
            if loaded is None:
                tokenizer = self._configured_tokenizer()
                loaded = tokenizer, self._prepare(ort, tokenizer)
            tokenizer, session = loaded
            if self._passage_tokens:
                read_at_most(tokenizer, self._passage_tokens)
            return tokenizer, session, frozenset(i.name for i in session.get_inputs())
        except ModelUnavailable:
            raise
        except Exception as e:
            raise ModelUnavailable(f"cannot load the ONNX model of {self.model_id!r} from {self.folder}: {e}") from e

    def _session(self, ort: Any, path: Path, *, optimised: bool, save_to: Path | None = None) -> Any:
        threads = self._threads
        return onnx_session(ort, path, optimised=optimised, threads=threads, inter_threads=threads, save_to=save_to)

    def _configured_tokenizer(self) -> Any:
        """The tokenizer exactly as fastembed sets it up for this folder (imported this once)."""
        from fastembed.common.preprocessor_utils import load_tokenizer

        tokenizer, _special = load_tokenizer(self.folder)
        return tokenizer

    def _prepare(self, ort: Any, tokenizer: Any) -> Any:
        """Optimise the graph, saving it and the configured tokenizer for the next process."""

        def build(work: Path | None) -> Any:
            save_to = None if work is None or self._external_data else work / GRAPH_FILE
            session = self._session(ort, self.folder / self._model_file, optimised=False, save_to=save_to)
            if work is not None:
                tokenizer.save(str(work / TOKENIZER_FILE))
            return session

        return prepare(self.prepared, build, {"model": self.model_id, "onnxruntime": ort.__version__})

    # ---------------------------------------------------------------- running

    def _embed(self, texts: list[str], session: Any = None) -> np.ndarray:
        tokenizer, own, inputs = self._load()
        session = session or own
        encoded = tokenizer.encode_batch(texts)
        input_ids = np.array([e.ids for e in encoded], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        feed = {"input_ids": input_ids}
        if "attention_mask" in inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in inputs:
            feed["token_type_ids"] = np.zeros_like(input_ids)
        hidden = session.run(None, feed)[0]
        if self._pooling == "cls":
            pooled = hidden[:, 0]
        else:  # masked mean, summed in float64 as fastembed sums it
            summed = np.sum(hidden, axis=1, where=mask[:, :, np.newaxis].astype(bool), dtype=np.float64)
            pooled = summed / np.maximum(np.sum(mask, axis=1, keepdims=True), 1e-9)
        if self._normalize:
            pooled = pooled / np.maximum(np.linalg.norm(pooled, ord=2, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(pooled, dtype=np.float32)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        # One passage per run, as a query runs: an int8 model quantizes each run's activations with one
        # scale, so a passage batched with others would get a vector that depends on its neighbours.
        prefixed = [self.passage_prefix + t for t in texts]
        vectors = self.lanes.map(lambda session, text: self._embed([text], session), prefixed)
        return np.concatenate(vectors if vectors is not None else [self._embed([text]) for text in prefixed])

    def prepare_for_bulk(self) -> None:
        """Many passages are coming (an index run): open one single-threaded session per core (`Lanes`),
        unless a thread count was asked for."""
        if self._threads or self.lanes.sessions or not (count := bulk_lanes()):
            return
        import onnxruntime as ort

        self._load()  # the prepared graph exists from here on (or, with external data, never)
        graph = self.prepared / GRAPH_FILE
        path, optimised = (graph, True) if graph.is_file() else (self.folder / self._model_file, False)
        self.lanes.open(lambda: onnx_session(ort, path, optimised=optimised, threads=1, inter_threads=1), count)

    def end_bulk(self) -> None:
        """The long run is over: let the lanes' sessions go (each holds a copy of the weights)."""
        self.lanes.close()

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self._embed([self.query_prefix + text])[0])
