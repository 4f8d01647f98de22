"""Vectors kept by stores without a native index: exact numpy search, HNSW files, caches."""
