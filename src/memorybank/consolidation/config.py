"""Consolidation configured from text: the service's and the CLI's settings (I/O-free).

``memorybank serve`` and ``memorybank consolidate`` read these (flags first, then the
environment), as ``memorybank.server.app.app_from_env`` does for every worker process:

* ``MEMORYBANK_JUDGE_URL`` (``--judge-url``) and ``MEMORYBANK_JUDGE_MODEL``
  (``--judge-model``): an OpenAI-compatible endpoint and model for ``LLMJudge``; both or
  neither. The key comes from ``MEMORYBANK_JUDGE_API_KEY`` only (never a flag: a flag
  shows in ``ps`` and shell history); unset, no key is sent (a local server).
* ``MEMORYBANK_CONSOLIDATE_EVERY`` (``serve --consolidate-every``): a duration (``90``
  or ``90s``, ``15m``, ``2h``, ``1d``) between two background consolidation ticks;
  unset, empty or ``off``: no background consolidation.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from memorybank.core.judge import LLMJudge
from memorybank.errors import ConfigurationError

__all__ = [
    "CONSOLIDATE_EVERY_ENV",
    "JUDGE_API_KEY_ENV",
    "JUDGE_MODEL_ENV",
    "JUDGE_URL_ENV",
    "consolidate_every",
    "judge_from",
]

JUDGE_URL_ENV = "MEMORYBANK_JUDGE_URL"
JUDGE_MODEL_ENV = "MEMORYBANK_JUDGE_MODEL"
#: The judge's API key: read from the environment only.
JUDGE_API_KEY_ENV = "MEMORYBANK_JUDGE_API_KEY"
CONSOLIDATE_EVERY_ENV = "MEMORYBANK_CONSOLIDATE_EVERY"

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.I)
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def consolidate_every(text: str | None, name: str = CONSOLIDATE_EVERY_ENV) -> float | None:
    """Seconds between background consolidation ticks from ``text`` (``90``, ``90s``,
    ``15m``, ``2h``, ``1d``); ``None`` (off) for unset, empty or ``off``."""
    if text is None or not text.strip() or text.strip().lower() == "off":
        return None
    match = _DURATION.match(text)
    seconds = float(match.group(1)) * _UNIT[match.group(2).lower()] if match else 0.0
    if not seconds > 0:
        raise ConfigurationError(
            f"{name} must be a positive duration such as 90s, 15m, 2h or 1d (or off), got {text!r}"
        )
    return seconds


def judge_from(
    url: str | None = None,
    model: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> LLMJudge | None:
    """The ``LLMJudge`` the settings name: ``url`` and ``model`` (else
    ``$MEMORYBANK_JUDGE_URL`` and ``$MEMORYBANK_JUDGE_MODEL``), the key from
    ``$MEMORYBANK_JUDGE_API_KEY``; ``None`` when neither is set. ``ConfigurationError``
    when only one of the URL and the model is."""
    env = os.environ if environ is None else environ
    url = url or env.get(JUDGE_URL_ENV) or None
    model = model or env.get(JUDGE_MODEL_ENV) or None
    if url is None and model is None:
        return None
    if url is None or model is None:
        raise ConfigurationError(
            f"a judge needs both its URL ({JUDGE_URL_ENV}, --judge-url) and its model"
            f" ({JUDGE_MODEL_ENV}, --judge-model)"
        )
    return LLMJudge(base_url=url, model=model, api_key=env.get(JUDGE_API_KEY_ENV) or None)
