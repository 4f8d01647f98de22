"""A torch-free BERT sentence encoder: NumPy for the maths, ``tokenizers`` for the text.

It runs sentence-transformers models of the plain BERT family (all-MiniLM-L6-v2,
all-MiniLM-L12-v2, bge-small, e5-small, ...) whose directory holds
``model.safetensors`` + ``tokenizer.json`` and whose pipeline is Transformer ->
Pooling (mean or CLS) -> optional Normalize. Its vectors match the
sentence-transformers/torch ones to ~1e-7 (cosine 1 - 1e-7), so the same
``model_id`` is used for both. It loads in ~0.2 s instead of the ~10 s that
importing torch + sentence-transformers takes, but encodes ~3x slower on CPU.

Only :mod:`memorybank.embeddings.local` uses this module; it is private.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from tokenizers import Tokenizer

F32 = npt.NDArray[np.float32]
I64 = npt.NDArray[np.int64]

_DTYPES: dict[str, type[np.generic]] = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
}
_MASKED = np.float32(-1e9)
_ST_PREFIX = "sentence_transformers.models."


def _read_json(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    return data


def _layout(model_dir: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The Hugging Face model's own folder and the sentence-transformers module list."""
    modules: list[dict[str, Any]] = []
    if (model_dir / "modules.json").is_file():
        loaded = json.loads((model_dir / "modules.json").read_text(encoding="utf-8"))
        if not isinstance(loaded, list):
            raise ValueError("modules.json is not a list")
        modules = loaded
    transformer_dir = model_dir
    if modules and str(modules[0].get("type", "")).endswith("Transformer"):
        transformer_dir = model_dir / str(modules[0].get("path", ""))
    return transformer_dir, modules


def unsupported_reason(model_dir: Path) -> str | None:
    """Why this backend cannot run ``model_dir`` (``None`` when it can)."""
    try:
        transformer_dir, modules = _layout(model_dir)
    except (OSError, ValueError) as exc:
        return f"unreadable modules.json: {exc}"
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        if not (transformer_dir / name).is_file():
            return f"{name} is missing"
    try:
        config = _read_json(transformer_dir / "config.json")
    except (OSError, ValueError) as exc:
        return f"unreadable config.json: {exc}"
    if config.get("model_type") != "bert":
        return f"model_type {config.get('model_type')!r} is not 'bert'"
    if config.get("position_embedding_type", "absolute") != "absolute":
        return "only absolute position embeddings are supported"
    if config.get("hidden_act", "gelu") not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        return f"activation {config.get('hidden_act')!r} is not supported"
    kinds = [str(m.get("type", "")).removeprefix(_ST_PREFIX) for m in modules]
    if kinds and (
        kinds[0] != "Transformer" or any(k not in ("Pooling", "Normalize") for k in kinds[1:])
    ):
        return f"pipeline {kinds} is not Transformer -> Pooling -> Normalize"
    if _pooling_mode(model_dir, modules) is None:
        return "only mean or CLS pooling is supported"
    return None


def _pooling_mode(model_dir: Path, modules: list[dict[str, Any]]) -> str | None:
    pooling = [m for m in modules if str(m.get("type", "")).endswith("Pooling")]
    if not pooling:
        return "mean"  # what sentence-transformers adds to a bare Hugging Face model
    cfg_path = model_dir / str(pooling[0].get("path", "")) / "config.json"
    try:
        cfg = _read_json(cfg_path)
    except (OSError, ValueError):
        return None
    if "pooling_mode" in cfg:  # newer sentence-transformers spelling
        mode = cfg["pooling_mode"]
        return {"mean": "mean", "cls": "cls"}.get(str(mode))
    enabled = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
    if enabled == ["pooling_mode_mean_tokens"]:
        return "mean"
    if enabled == ["pooling_mode_cls_token"]:
        return "cls"
    return None


def load_safetensors(path: Path) -> dict[str, npt.NDArray[Any]]:
    """Read a ``.safetensors`` file into NumPy arrays (memory-mapped, no copy)."""
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    (header_len,) = struct.unpack("<Q", bytes(raw[:8]))
    header = json.loads(bytes(raw[8 : 8 + header_len]))
    base = 8 + header_len
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"tensor {name}: dtype {info['dtype']} is not supported")
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(raw[base + start : base + end], dtype=dtype).reshape(
            info["shape"]
        )
    return tensors


def _erf(x: F32) -> F32:
    # Abramowitz & Stegun 7.1.26: |error| < 1.5e-7, far below float32 model noise.
    t = np.float32(1.0) / (np.float32(1.0) + np.float32(0.3275911) * np.abs(x))
    poly = t * (
        np.float32(0.254829592)
        + t
        * (
            np.float32(-0.284496736)
            + t
            * (
                np.float32(1.421413741)
                + t * (np.float32(-1.453152027) + t * np.float32(1.061405429))
            )
        )
    )
    y: F32 = np.float32(1.0) - poly * np.exp(-(x * x))
    return np.copysign(y, x)


def _layer_norm(x: F32, weight: F32, bias: F32, eps: float) -> F32:
    centred = x - x.mean(-1, keepdims=True)
    var = (centred * centred).mean(-1, keepdims=True)
    out: F32 = centred / np.sqrt(var + np.float32(eps)) * weight + bias
    return out


class BertText:
    """What every torch-free BERT backend shares: the config, the tokenizer (truncated at
    ``max_seq_length``) and the length-sorted, per-batch-padded input arrays."""

    def __init__(self, model_dir: Path, *, max_seq_length: int | None = None) -> None:
        from tokenizers import Tokenizer

        reason = unsupported_reason(model_dir)
        if reason is not None:
            raise ValueError(f"{model_dir}: {reason}")
        transformer_dir, modules = _layout(model_dir)
        self.transformer_dir = transformer_dir
        self.config = config = _read_json(transformer_dir / "config.json")
        self.pooling = _pooling_mode(model_dir, modules) or "mean"
        max_positions = int(config.get("max_position_embeddings", 512))
        if max_seq_length is None:
            st_cfg = transformer_dir / "sentence_bert_config.json"
            if st_cfg.is_file():
                max_seq_length = _read_json(st_cfg).get("max_seq_length")
        self.max_seq_length = min(int(max_seq_length or max_positions), max_positions)

        self.tokenizer: Tokenizer = Tokenizer.from_file(str(transformer_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=self.max_seq_length)
        self.pad_id = int(config.get("pad_token_id") or 0)
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.heads = int(config["num_attention_heads"])
        self.tanh_gelu = config.get("hidden_act", "gelu") != "gelu"
        self.dimensions = int(config["hidden_size"])

    def batches(
        self, texts: Sequence[str], batch_size: int
    ) -> Iterator[tuple[list[int], I64, I64, I64]]:
        """``(rows, input_ids, attention_mask, token_type_ids)`` per batch: ``rows`` are the
        texts' indexes. Sorted by length so each batch pads little, as sentence-transformers
        does."""
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            seq = max(len(encodings[i].ids) for i in chunk)
            ids = np.full((len(chunk), seq), self.pad_id, dtype=np.int64)
            types = np.zeros((len(chunk), seq), dtype=np.int64)
            mask = np.zeros((len(chunk), seq), dtype=np.int64)
            for row, i in enumerate(chunk):
                enc = encodings[i]
                n = len(enc.ids)
                ids[row, :n] = enc.ids
                types[row, :n] = enc.type_ids
                mask[row, :n] = 1
            yield chunk, ids, mask, types


def bert_weights(transformer_dir: Path) -> tuple[str, dict[str, npt.NDArray[Any]]]:
    """The name prefix (``"bert."`` or ``""``) and the tensors of ``model.safetensors``."""
    weights = load_safetensors(transformer_dir / "model.safetensors")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    return prefix, weights


class NumpyBert(BertText):
    """A BERT encoder plus sentence-transformers pooling, in NumPy."""

    def __init__(self, model_dir: Path, *, max_seq_length: int | None = None) -> None:
        super().__init__(model_dir, max_seq_length=max_seq_length)
        prefix, weights = bert_weights(self.transformer_dir)

        def get(name: str, *, transpose: bool = False) -> F32:
            array = weights[prefix + name].astype(np.float32)
            return np.ascontiguousarray(array.T if transpose else array)

        self.word = get("embeddings.word_embeddings.weight")
        self.position = get("embeddings.position_embeddings.weight")
        self.token_type = get("embeddings.token_type_embeddings.weight")
        self.emb_norm = (get("embeddings.LayerNorm.weight"), get("embeddings.LayerNorm.bias"))
        self.dimensions = int(self.word.shape[1])
        self.layers: list[tuple[F32, ...]] = []
        for i in range(int(self.config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv = ("query", "key", "value")
            self.layers.append(
                (
                    np.ascontiguousarray(
                        np.concatenate([get(f"{p}attention.self.{n}.weight") for n in qkv]).T
                    ),
                    np.concatenate([get(f"{p}attention.self.{n}.bias") for n in qkv]),
                    get(p + "attention.output.dense.weight", transpose=True),
                    get(p + "attention.output.dense.bias"),
                    get(p + "attention.output.LayerNorm.weight"),
                    get(p + "attention.output.LayerNorm.bias"),
                    get(p + "intermediate.dense.weight", transpose=True),
                    get(p + "intermediate.dense.bias"),
                    get(p + "output.dense.weight", transpose=True),
                    get(p + "output.dense.bias"),
                    get(p + "output.LayerNorm.weight"),
                    get(p + "output.LayerNorm.bias"),
                )
            )

    def _gelu(self, x: F32) -> F32:
        if self.tanh_gelu:
            inner = np.float32(math.sqrt(2.0 / math.pi)) * (x + np.float32(0.044715) * x * x * x)
            out = np.float32(0.5) * x * (np.float32(1.0) + np.tanh(inner))
            return out.astype(np.float32, copy=False)
        x *= np.float32(0.5) * (np.float32(1.0) + _erf(x * np.float32(1.0 / math.sqrt(2.0))))
        return x

    def forward(self, ids: I64, mask: I64, types: I64) -> F32:
        """Last hidden state, shape (batch, seq, hidden)."""
        batch, seq = ids.shape
        heads = self.heads
        width = self.dimensions
        head_dim = width // heads
        x = self.word[ids] + self.position[:seq][None, :, :] + self.token_type[types]
        x = _layer_norm(x, *self.emb_norm, self.eps).reshape(batch * seq, width)
        bias = np.where(mask[:, None, None, :] > 0, np.float32(0.0), _MASKED).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(head_dim))
        for qkv_w, qkv_b, o_w, o_b, n1_w, n1_b, i_w, i_b, o2_w, o2_b, n2_w, n2_b in self.layers:
            qkv = (x @ qkv_w + qkv_b).reshape(batch, seq, 3, heads, head_dim)
            qkv = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = np.matmul(q, np.ascontiguousarray(k.transpose(0, 1, 3, 2)))
            scores *= scale
            scores += bias
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            ctx = np.ascontiguousarray(np.matmul(scores, v).transpose(0, 2, 1, 3))
            x = _layer_norm(x + (ctx.reshape(batch * seq, width) @ o_w + o_b), n1_w, n1_b, self.eps)
            hidden = self._gelu(x @ i_w + i_b)
            x = _layer_norm(x + (hidden @ o2_w + o2_b), n2_w, n2_b, self.eps)
        out: F32 = x.reshape(batch, seq, width)
        return out

    def encode(self, texts: Sequence[str], *, batch_size: int) -> F32:
        """Unit-length sentence vectors, shape (len(texts), dimensions)."""
        result = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return result
        for chunk, ids, mask, types in self.batches(texts, batch_size):
            hidden = self.forward(ids, mask, types)
            if self.pooling == "cls":
                pooled = hidden[:, 0, :]
            else:
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(1) / np.maximum(weights.sum(1), np.float32(1e-9))
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            result[chunk] = pooled / np.maximum(norms, np.float32(1e-12))
        return result
