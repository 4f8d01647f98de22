"""memorybank as a service: ``create_app(url)`` (FastAPI) and ``memorybank serve``.

Needs the ``server`` extra (``pip install memorybank[server]``).
"""

from memorybank.server.app import create_app

__all__ = ["create_app"]
