"""``AsyncMemory`` and its namespaces (async source; ``Memory`` is generated)."""
