"""The same BERT sentence encoder as :mod:`._numpy_bert`, run by ONNX Runtime.

No ONNX file is downloaded and torch is not needed: the graph is written here, node
by node with the ``onnx`` package's helper API, from the model's own
``model.safetensors`` (embeddings, every encoder layer's attention and GELU FFN with
``LayerNormalization``, then mean or CLS pooling and L2 normalisation, exactly as
``NumpyBert.forward`` + ``encode`` compute them). The built file is kept under the
user's cache directory (``$MEMORYBANK_CACHE_DIR``, else ``$XDG_CACHE_HOME/memorybank``,
else ``~/.cache/memorybank``), in ``onnx/``, named by the SHA-256 of the weights, the
config and this builder's version, so a second process loads it instead of building
it; when that directory cannot be written the model is built in memory.

``quantized=True`` runs a copy whose weights are int8 (ONNX Runtime's dynamic
quantisation: int8 weights, activations quantised per call), cached beside it.

Only :mod:`memorybank.embeddings.local` uses this module; it is private.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memorybank.embeddings._numpy_bert import F32, BertText, bert_weights
from memorybank.errors import ConfigurationError
from memorybank.runtime.native import usearch_unsafe

if TYPE_CHECKING:
    import onnx

#: Bumped whenever the graph below changes, so an old cached file is not reused.
GRAPH_VERSION = 1
#: Bumped whenever the int8 settings in ``_quantize`` change.
QUANT_VERSION = 1
_OPSET = 17  # LayerNormalization; onnxruntime >= 1.14 runs it
_IR_VERSION = 8


def cache_root() -> Path:
    """Where built models are kept (see the module docstring)."""
    explicit = os.environ.get("MEMORYBANK_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "memorybank"


def weights_key(text: BertText) -> str:
    """The SHA-256 of what the graph is made of: weights, config, pooling, builder version."""
    digest = hashlib.sha256()
    digest.update(f"memorybank-onnx-bert/{GRAPH_VERSION}/{text.pooling}/".encode())
    digest.update((text.transformer_dir / "config.json").read_bytes())
    with (text.transformer_dir / "model.safetensors").open("rb") as weights:
        for block in iter(lambda: weights.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _Graph:
    """A list of ONNX nodes and initializers with generated value names."""

    def __init__(self) -> None:
        from onnx import helper, numpy_helper

        self.helper = helper
        self.numpy_helper = numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, array: Any) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.asarray(array), name))
        return name

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{kind.lower()}_{self._count}"
        self.nodes.append(
            self.helper.make_node(kind, list(inputs), [out], name=f"n{self._count}", **attrs)
        )
        return out

    def linear(self, x: str, weight: str, bias: str) -> str:
        return self.op("Add", self.op("MatMul", x, weight), bias)

    def layer_norm(self, x: str, weight: str, bias: str, eps: float) -> str:
        return self.op("LayerNormalization", x, weight, bias, axis=-1, epsilon=eps)


def build_model(text: BertText) -> onnx.ModelProto:
    """The encoder + pooling + normalisation as an ONNX model (inputs ``input_ids``,
    ``attention_mask``, ``token_type_ids``: int64 (batch, seq); output ``embeddings``:
    float32 (batch, hidden), unit length)."""
    from onnx import TensorProto, helper

    prefix, weights = bert_weights(text.transformer_dir)
    g = _Graph()

    def weight(name: str, *, transpose: bool = False) -> str:
        array = np.asarray(weights[prefix + name], dtype=np.float32)
        return g.const(name, np.ascontiguousarray(array.T if transpose else array))

    width = text.dimensions
    heads = text.heads
    head_dim = width // heads
    eps = text.eps

    # Embeddings: word + position (0..seq-1) + token type, then LayerNorm.
    one_d = g.const("const.one_d", np.array([1], dtype=np.int64))
    seq_len = g.op("Slice", g.op("Shape", "input_ids"), one_d, g.const("const.two", np.array([2])))
    positions = g.op(
        "Range",
        g.const("const.zero", np.array(0, dtype=np.int64)),
        g.op("Squeeze", seq_len, g.const("const.axis0", np.array([0], dtype=np.int64))),
        g.const("const.one", np.array(1, dtype=np.int64)),
    )
    x = g.op(
        "Add",
        g.op(
            "Add",
            g.op("Gather", weight("embeddings.word_embeddings.weight"), "input_ids"),
            g.op("Gather", weight("embeddings.position_embeddings.weight"), positions),
        ),
        g.op("Gather", weight("embeddings.token_type_embeddings.weight"), "token_type_ids"),
    )
    x = g.layer_norm(
        x, weight("embeddings.LayerNorm.weight"), weight("embeddings.LayerNorm.bias"), eps
    )

    # Attention bias: 0 where the mask is 1, -1e9 where it is 0; shape (batch, 1, 1, seq).
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    bias = g.op(
        "Mul",
        g.op("Sub", g.const("const.f_one", np.array(1.0, dtype=np.float32)), mask),
        g.const("const.masked", np.array(-1e9, dtype=np.float32)),
    )
    bias = g.op("Unsqueeze", bias, g.const("const.axes12", np.array([1, 2], dtype=np.int64)))
    split_heads = g.const("const.split_heads", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merge_heads = g.const("const.merge_heads", np.array([0, 0, width], dtype=np.int64))
    scale = g.const("const.scale", np.array(1.0 / math.sqrt(head_dim), dtype=np.float32))
    half = g.const("const.half", np.array(0.5, dtype=np.float32))
    f_one = "const.f_one"

    for i in range(int(text.config["num_hidden_layers"])):
        p = f"encoder.layer.{i}."

        def project(name: str, source: str, prefix: str = p) -> str:
            return g.linear(
                source,
                weight(f"{prefix}{name}.weight", transpose=True),
                weight(f"{prefix}{name}.bias"),
            )

        q = g.op(
            "Transpose",
            g.op("Reshape", project("attention.self.query", x), split_heads),
            perm=[0, 2, 1, 3],
        )
        k_t = g.op(
            "Transpose",
            g.op("Reshape", project("attention.self.key", x), split_heads),
            perm=[0, 2, 3, 1],
        )
        v = g.op(
            "Transpose",
            g.op("Reshape", project("attention.self.value", x), split_heads),
            perm=[0, 2, 1, 3],
        )
        scores = g.op("Add", g.op("Mul", g.op("MatMul", q, k_t), scale), bias)
        probs = g.op("Softmax", scores, axis=-1)
        ctx = g.op(
            "Reshape",
            g.op("Transpose", g.op("MatMul", probs, v), perm=[0, 2, 1, 3]),
            merge_heads,
        )
        x = g.layer_norm(
            g.op("Add", x, project("attention.output.dense", ctx)),
            weight(p + "attention.output.LayerNorm.weight"),
            weight(p + "attention.output.LayerNorm.bias"),
            eps,
        )
        hidden = project("intermediate.dense", x)
        if text.tanh_gelu:
            cube = g.op("Mul", g.op("Mul", hidden, hidden), hidden)
            inner = g.op(
                "Mul",
                g.op(
                    "Add",
                    hidden,
                    g.op("Mul", cube, g.const(f"{p}gelu.c", np.array(0.044715, np.float32))),
                ),
                g.const(f"{p}gelu.k", np.array(math.sqrt(2.0 / math.pi), np.float32)),
            )
            gate = g.op("Add", f_one, g.op("Tanh", inner))
        else:
            inv_sqrt2 = g.const(f"{p}gelu.k", np.array(1.0 / math.sqrt(2.0), np.float32))
            gate = g.op("Add", f_one, g.op("Erf", g.op("Mul", hidden, inv_sqrt2)))
        hidden = g.op("Mul", g.op("Mul", hidden, half), gate)
        x = g.layer_norm(
            g.op("Add", x, project("output.dense", hidden)),
            weight(p + "output.LayerNorm.weight"),
            weight(p + "output.LayerNorm.bias"),
            eps,
        )

    # Pooling, then L2 normalisation.
    if text.pooling == "cls":
        pooled = g.op("Gather", x, g.const("const.cls", np.array(0, dtype=np.int64)), axis=1)
    else:
        token_weights = g.op("Unsqueeze", mask, g.const("const.axis2", np.array([2])))
        axis1 = g.const("const.axis1", np.array([1], dtype=np.int64))
        total = g.op("ReduceSum", g.op("Mul", x, token_weights), axis1, keepdims=0)
        count = g.op(
            "Max",
            g.op("ReduceSum", token_weights, axis1, keepdims=0),
            g.const("const.min_count", np.array(1e-9, dtype=np.float32)),
        )
        pooled = g.op("Div", total, count)
    norm = g.op(
        "Sqrt",
        g.op("ReduceSumSquare", pooled, axes=[-1], keepdims=1),  # axes: an attribute in 17
    )
    norm = g.op("Max", norm, g.const("const.min_norm", np.array(1e-12, dtype=np.float32)))
    g.nodes.append(helper.make_node("Div", [pooled, norm], ["embeddings"], name="normalise"))

    batch_seq = ["batch", "seq"]
    graph = helper.make_graph(
        g.nodes,
        "memorybank_bert",
        [
            helper.make_tensor_value_info(name, TensorProto.INT64, batch_seq)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        ],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", width])],
        initializer=g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", _OPSET)],
        producer_name="memorybank",
        producer_version=str(GRAPH_VERSION),
    )
    model.ir_version = _IR_VERSION
    return model


def _write_atomically(path: Path, write: Any) -> None:
    """``write(tmp_path)`` then rename onto ``path`` (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _quantize(source: Path, target: Path) -> None:
    """Int8 weights per output channel, for every op ONNX Runtime quantises dynamically.
    ``reduce_range`` (7-bit weights) avoids the u8 x s8 overflow of AVX2 CPUs without
    VNNI; on LoCoMo it costs no recall (docs/embeddings.md)."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)  # its "consider pre-processing" warning goes to the root logger
    try:
        quantize_dynamic(
            source, target, weight_type=QuantType.QInt8, per_channel=True, reduce_range=True
        )
    finally:
        root.setLevel(level)


def model_source(text: BertText, *, quantized: bool, cache_dir: Path | None = None) -> Path | bytes:
    """The model's cached file (built first when missing), or its bytes when the cache
    directory cannot be written. ``onnx`` is imported only to build."""
    key = weights_key(text)[:32]
    folder = (cache_dir or cache_root()) / "onnx"
    fp32 = folder / f"bert-{key}.onnx"
    int8 = folder / f"bert-{key}-int8v{QUANT_VERSION}.onnx"
    try:
        if not fp32.is_file():
            import onnx

            model = build_model(text)
            _write_atomically(fp32, lambda tmp: onnx.save_model(model, str(tmp)))
        if quantized and not int8.is_file():
            _write_atomically(int8, lambda tmp: _quantize(fp32, tmp))
        return int8 if quantized else fp32
    except OSError:
        pass  # a read-only or full cache directory: build in memory
    import onnx

    model = build_model(text)
    if not quantized:
        return bytes(model.SerializeToString())
    with tempfile.TemporaryDirectory(prefix="memorybank-onnx-") as tmp:
        source, target = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        onnx.save_model(model, str(source))
        _quantize(source, target)
        return target.read_bytes()


def _threads() -> int:
    """ONNX Runtime's intra-op threads: ``$OMP_NUM_THREADS`` when set (as NumPy's BLAS
    and torch read it), else 0 = its own choice (one per physical core)."""
    try:
        return max(0, int(os.environ.get("OMP_NUM_THREADS", "0")))
    except ValueError:
        return 0


class OnnxBert(BertText):
    """:class:`~._numpy_bert.NumpyBert`'s vectors from an ONNX Runtime session."""

    def __init__(
        self,
        model_dir: Path,
        *,
        quantized: bool = False,
        cache_dir: Path | None = None,
        max_seq_length: int | None = None,
    ) -> None:
        if usearch_unsafe():
            # usearch imported by other code than memorybank's, before the system's C++
            # runtime: onnxruntime would crash the process (memorybank.runtime.native)
            raise ConfigurationError(
                "the ONNX backend cannot load after usearch was imported by other code than"
                " memorybank (onnxruntime would crash the process): create the LocalEmbedder"
                " before importing usearch, or use backend='numpy'"
            )
        import onnxruntime as ort

        super().__init__(model_dir, max_seq_length=max_seq_length)
        self.quantized = quantized
        self.source = model_source(self, quantized=quantized, cache_dir=cache_dir)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = _threads()
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # no warnings on stderr
        source = str(self.source) if isinstance(self.source, Path) else self.source
        self.session = ort.InferenceSession(
            source, sess_options=options, providers=["CPUExecutionProvider"]
        )

    def encode(self, texts: Sequence[str], *, batch_size: int) -> F32:
        """Unit-length sentence vectors, shape (len(texts), dimensions)."""
        result = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return result
        for chunk, ids, mask, types in self.batches(texts, batch_size):
            (vectors,) = self.session.run(
                ["embeddings"],
                {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
            )
            result[chunk] = vectors
        return result
