"""The context builder, compaction, sessions and turns (async source)."""
