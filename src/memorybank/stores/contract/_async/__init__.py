"""``AsyncStore``: the contract (async source; ``Store`` is generated from it)."""
