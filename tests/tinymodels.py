"""Builders of tiny BERT-shaped ONNX models that fastembed 0.9.1 loads from a local directory.

What fastembed reads from such a directory (checked in its source):
* the ONNX file named by the registered ``model_file`` (we use ``model.onnx``);
* ``tokenizer.json`` and ``tokenizer_config.json`` (required; ``model_max_length`` sets truncation,
  ``pad_token`` is the fallback when tokenizer.json has no padding), ``special_tokens_map.json`` and
  ``config.json`` (optional; ``pad_token_id``; we also read ``hidden_size`` as the dimension);
* inputs ``input_ids`` / ``attention_mask`` / ``token_type_ids`` (int64, fed when the graph declares them);
* the FIRST graph output: an embedder's ``[batch, seq, dim]`` is mean-pooled with the attention mask
  and normalised; a cross-encoder's ``[batch, n]`` is read as ``output[:, 0]`` (raw score).

Everything is deterministic (seeded numpy, fixed training corpus), a few hundred KB, thousands of
texts per second.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
MAX_LENGTH = 128
OPSET = 13
IR_VERSION = 8  # old enough for any onnxruntime that fastembed 0.9.1 accepts

CORPUS = [
    "The cat sat on the mat and looked at the garden.",
    "Rust async runtimes such as tokio spawn tasks on a thread pool.",
    "Python is a programming language used for data science and scripting.",
    "Search engines combine full text search with vector embeddings.",
    "Reciprocal rank fusion merges two ranked lists of documents.",
    "The weather in Tokyo is warm in summer and cold in winter.",
    "Markdown files hold notes, headings, lists and code blocks.",
    "A database index makes queries fast on large tables.",
    "東京は日本の首都です。設定ファイルを編集して検索します。",
    "猫がマットの上に座っていました。天気は晴れです。",
]


def _tokenizer() -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()  # also splits CJK into characters
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(
        vocab_size=400, special_tokens=SPECIAL_TOKENS, min_frequency=1, show_progress=False
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",  # second segment gets token_type_id 1
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    tok.enable_truncation(max_length=MAX_LENGTH)
    return tok


def _write_tokenizer_files(out: Path, hidden_size: int) -> int:
    """Write tokenizer.json and the json files fastembed reads; return the vocabulary size."""
    tok = _tokenizer()
    tok.save(str(out / "tokenizer.json"))
    vocab_size = tok.get_vocab_size()
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "BertTokenizer",
                "do_lower_case": True,
                "model_max_length": MAX_LENGTH,
                "pad_token": "[PAD]",
                "unk_token": "[UNK]",
                "cls_token": "[CLS]",
                "sep_token": "[SEP]",
            },
            indent=2,
        )
    )
    (out / "special_tokens_map.json").write_text(
        json.dumps({"pad_token": "[PAD]", "unk_token": "[UNK]", "cls_token": "[CLS]", "sep_token": "[SEP]"})
    )
    (out / "config.json").write_text(
        json.dumps(
            {
                "model_type": "bert",
                "hidden_size": hidden_size,
                "vocab_size": vocab_size,
                "pad_token_id": tok.token_to_id("[PAD]"),
                "max_position_embeddings": MAX_LENGTH,
            },
            indent=2,
        )
    )
    return vocab_size


def _token_table(vocab_size: int, dim: int, seed: int) -> np.ndarray:
    table = np.random.default_rng(seed).standard_normal((vocab_size, dim)).astype(np.float32)
    table[: len(SPECIAL_TOKENS)] = 0.0  # special tokens carry no meaning: [PAD]/[CLS]/[SEP] add nothing
    return table


def _inputs() -> list[onnx.ValueInfoProto]:
    return [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]


def _save(graph: onnx.GraphProto, path: Path) -> None:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="groove-tui-tests")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def build_tiny_embedder(dir: Path, dim: int = 32, seed: int = 0) -> Path:
    """A token-embedding lookup whose ``last_hidden_state`` fastembed mean-pools into a sentence vector."""
    out = Path(dir)
    out.mkdir(parents=True, exist_ok=True)
    vocab_size = _write_tokenizer_files(out, dim)
    table = numpy_helper.from_array(_token_table(vocab_size, dim, seed), "token_embeddings")
    # a small per-segment offset so token_type_ids is a real input, as in a BERT export
    types = numpy_helper.from_array(
        np.random.default_rng(seed + 1).standard_normal((2, dim)).astype(np.float32) * 0.01, "type_embeddings"
    )
    nodes = [
        helper.make_node("Gather", ["token_embeddings", "input_ids"], ["tok"], axis=0),
        helper.make_node("Gather", ["type_embeddings", "token_type_ids"], ["typ"], axis=0),
        helper.make_node("Add", ["tok", "typ"], ["last_hidden_state"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_embedder",
        _inputs(),
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", dim])],
        initializer=[table, types],
    )
    _save(graph, out / "model.onnx")
    return out


def build_tiny_cross_encoder(dir: Path, dim: int = 64, seed: int = 1) -> Path:
    """A cross-encoder whose logit is ``scale * cosine(sum of query tokens, sum of document tokens)``.

    The two segments are told apart by token_type_ids (0 = query, 1 = document), so a document that
    shares words with the query scores higher than one that does not: enough for tests to assert
    a meaningful order, not only shape and determinism.
    """
    out = Path(dir)
    out.mkdir(parents=True, exist_ok=True)
    vocab_size = _write_tokenizer_files(out, dim)
    inits = [
        numpy_helper.from_array(_token_table(vocab_size, dim, seed), "token_embeddings"),
        numpy_helper.from_array(np.array([2], dtype=np.int64), "axis2"),
        numpy_helper.from_array(np.array([1], dtype=np.int64), "axis1"),
        numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one"),
        numpy_helper.from_array(np.array(1e-6, dtype=np.float32), "eps"),
        numpy_helper.from_array(np.array(10.0, dtype=np.float32), "scale"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["token_embeddings", "input_ids"], ["tok"], axis=0),  # [b, s, d]
        n("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),  # [b, s]
        n("Cast", ["token_type_ids"], ["seg"], to=TensorProto.FLOAT),
        n("Sub", ["one", "seg"], ["not_seg"]),
        n("Mul", ["mask", "not_seg"], ["mask_q"]),
        n("Mul", ["mask", "seg"], ["mask_d"]),
        n("Unsqueeze", ["mask_q", "axis2"], ["mask_q3"]),  # [b, s, 1]
        n("Unsqueeze", ["mask_d", "axis2"], ["mask_d3"]),
        n("Mul", ["tok", "mask_q3"], ["tok_q"]),
        n("Mul", ["tok", "mask_d3"], ["tok_d"]),
        n("ReduceSum", ["tok_q", "axis1"], ["sum_q"], keepdims=0),  # [b, d]
        n("ReduceSum", ["tok_d", "axis1"], ["sum_d"], keepdims=0),
        n("Mul", ["sum_q", "sum_d"], ["qd"]),
        n("ReduceSum", ["qd", "axis1"], ["dot"], keepdims=1),  # [b, 1]
        n("Mul", ["sum_q", "sum_q"], ["qq"]),
        n("ReduceSum", ["qq", "axis1"], ["qq_sum"], keepdims=1),
        n("Mul", ["sum_d", "sum_d"], ["dd"]),
        n("ReduceSum", ["dd", "axis1"], ["dd_sum"], keepdims=1),
        n("Mul", ["qq_sum", "dd_sum"], ["norm2"]),
        n("Sqrt", ["norm2"], ["norm"]),
        n("Max", ["norm", "eps"], ["denom"]),
        n("Div", ["dot", "denom"], ["cosine"]),
        n("Mul", ["cosine", "scale"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_cross_encoder",
        _inputs(),
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])],
        initializer=inits,
    )
    _save(graph, out / "model.onnx")
    return out
