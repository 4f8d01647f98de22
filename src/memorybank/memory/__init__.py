"""The ``Memory``/``AsyncMemory`` facade and its namespaces (threads, entries, facts, ...).

Import ``Memory`` and ``AsyncMemory`` from ``memorybank``."""
