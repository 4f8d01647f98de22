"""What the domain namespaces share, below the facade: ``_Core`` (the store and the
options a memory handle carries), compare-and-swap retries, the handle protocol the
services are typed against, and the long-term records (facts, documents, usage) that
recall, the context builder, extraction and consolidation read and write.

Internal: the public names are on ``memorybank`` and its namespaces.
"""
