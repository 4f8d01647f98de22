"""The in-process vector cache of the server stores (async source)."""
