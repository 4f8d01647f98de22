"""``python -m memorybank.cli``: the ``memorybank`` command."""

from memorybank.cli import main

main()
