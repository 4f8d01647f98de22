"""Context: the builder, compaction, sessions and turns (values here, I/O in ``_async``)."""
