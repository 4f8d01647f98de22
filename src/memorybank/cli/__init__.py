"""The ``memorybank`` command: a thin shell over ``Memory`` (parse, call, render).

``app`` (typer) holds the commands: ``app.py`` the core ones, ``read``, ``port`` and
``mcp`` their own groups; ``python -m memorybank`` and the console script run ``main``.
"""

from memorybank.cli.app import app, main

__all__ = ["app", "main"]
