"""Keyword ranking without I/O: the text analyzer (tokens, stop words, stemming) and Okapi
BM25 over a set of texts. Stores without a full-text index rank with it (the in-memory
store, Redis, the contract's derived ``text_search``), and so do ``memory.search``
(``memorybank.recall``, which re-exports these names) and ``memorybank search``.
"""
