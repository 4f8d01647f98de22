"""``python -m memorybank``: the ``memorybank`` command."""

from memorybank.cli import main

main()
