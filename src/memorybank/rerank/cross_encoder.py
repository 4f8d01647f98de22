"""``CrossEncoderReranker``: a sentence-transformers cross-encoder run on this machine.

Scores each (query, candidate) pair with ``CrossEncoder.predict`` (one forward
pass per ``batch_size`` pairs); the score is the model's own output, through
its default activation (a sigmoid, 0 to 1, for the usual one-label rerankers
such as ``cross-encoder/ms-marco-MiniLM-L-6-v2``). Needs
``pip install memorybank[local]`` (sentence-transformers, torch) and a model
already on disk: a model directory, or a Hugging Face model name already in the
local Hugging Face cache. Nothing is ever downloaded (``local_files_only``).

The model loads on first use (or on ``load()``), in the reranker's own worker
thread, which runs one prediction at a time, so an async search never blocks
its event loop. ``timeout`` bounds how long a search waits for a prediction
(the first one includes loading the model: call ``load()`` at start-up); past
it the search keeps its hybrid order and the prediction finishes unobserved.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memorybank.errors import ConfigurationError
from memorybank.rerank.base import RerankCandidate

__all__ = ["CrossEncoderReranker"]

INSTALL_HINT = "pip install memorybank[local]"
T = TypeVar("T")


def _cached(name: str) -> bool:
    """Whether the Hugging Face cache already holds model ``name`` (no network)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return False
    found = try_to_load_from_cache(name, "config.json")
    return isinstance(found, str)


class CrossEncoderReranker:
    """A local cross-encoder as a ``Reranker`` (see the module docstring).

    Args:
        model_name_or_path: a cross-encoder model directory, or the name of a
            model already in the Hugging Face cache.
        device: torch device (default ``"cpu"``).
        batch_size: pairs per forward pass.
        max_length: tokens per pair (default: the model's own limit).
        timeout: seconds a search waits for one prediction; ``None`` waits
            as long as it takes.

    The constructor only checks that the package and the model files are
    there (``ConfigurationError`` otherwise); ``close()`` stops the worker.
    """

    def __init__(
        self,
        model_name_or_path: str | os.PathLike[str],
        *,
        device: str = "cpu",
        batch_size: int = 32,
        max_length: int | None = None,
        timeout: float | None = 10.0,
    ) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise ConfigurationError(
                f"CrossEncoderReranker needs sentence-transformers: `{INSTALL_HINT}`"
            )
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
        ):
            raise ConfigurationError(f"max_length must be a positive int, got {max_length!r}")
        if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
            raise ConfigurationError(f"timeout must be > 0 or None, got {timeout!r}")
        path = Path(model_name_or_path).expanduser()
        if path.is_dir():
            if not (path / "config.json").is_file():
                raise ConfigurationError(
                    f"{str(path)!r} is not a cross-encoder model directory (no config.json)"
                )
            self._source = str(path)
        elif isinstance(model_name_or_path, str) and _cached(model_name_or_path):
            self._source = model_name_or_path
        else:
            raise ConfigurationError(
                f"no cross-encoder model at {str(model_name_or_path)!r}: pass a model directory, "
                "or the name of a model already in the Hugging Face cache (nothing is downloaded)"
            )
        self.model_name = str(model_name_or_path)
        self._device = device
        self._batch_size = batch_size
        self._max_length = max_length
        self._timeout = None if timeout is None else float(timeout)
        self._model: Any = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({self.model_name!r})"

    # -- in the worker thread ------------------------------------------------------

    def _load(self) -> Any:
        if self._model is None:
            from sentence_transformers import CrossEncoder

            try:
                self._model = CrossEncoder(
                    self._source,
                    device=self._device,
                    max_length=self._max_length,
                    local_files_only=True,
                )
            except (OSError, ValueError) as exc:
                raise ConfigurationError(
                    f"could not load cross-encoder {self.model_name!r}: {exc}"
                ) from exc
        return self._model

    def _predict(self, query: str, texts: list[str]) -> list[float]:
        import numpy as np

        model = self._load()
        scores = model.predict(
            [(query, text) for text in texts],
            batch_size=self._batch_size,
            show_progress_bar=False,
            convert_to_numpy=True,
        )
        array = np.asarray(scores, dtype=np.float64)
        if array.ndim != 1:
            raise ConfigurationError(
                f"cross-encoder {self.model_name!r} gives {array.shape[-1]} scores per pair; "
                "a reranker needs a one-label model"
            )
        return [float(x) for x in array]

    # -- the shells ---------------------------------------------------------------------

    def _submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        with self._lock:
            if self._closed:
                raise ConfigurationError("CrossEncoderReranker is closed")
            if self._pool is None:
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="memorybank-rerank"
                )
            return self._pool.submit(fn, *args)

    def _timed_out(self) -> TimeoutError:
        return TimeoutError(f"cross-encoder {self.model_name!r} took over {self._timeout} s")

    def load(self) -> None:
        """Load the model now (a warm-up, so the first search does not wait for it)."""
        self._submit(self._load).result()

    def rerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        """One score per candidate: the model's relevance of the pair (query, text)."""
        if not candidates:
            return []
        future = self._submit(self._predict, query, [c.text for c in candidates])
        try:
            return future.result(timeout=self._timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise self._timed_out() from None

    async def arerank(self, query: str, candidates: Sequence[RerankCandidate]) -> list[float]:
        """Async twin of ``rerank``: the prediction runs in the worker thread."""
        if not candidates:
            return []
        future = asyncio.wrap_future(
            self._submit(self._predict, query, [c.text for c in candidates])
        )
        try:
            return await asyncio.wait_for(future, self._timeout)
        except TimeoutError:
            raise self._timed_out() from None

    def close(self) -> None:
        """Stop the worker (a running prediction finishes); later calls raise."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)
        self._model = None

    def __enter__(self) -> CrossEncoderReranker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
