"""The record kinds memorybank makes in the stores' ``record_*`` space: what a dump
carries (``memorybank.dump.format``) and what the vector index rebuilds from.
"""

from __future__ import annotations

__all__ = ["RECORD_KINDS"]

#: Record kinds a dump carries (the stores' ``record_*`` kinds made by memorybank).
RECORD_KINDS = (
    "fact",
    "fact_version",
    "fact_source",
    "core_fact",
    "core_fact_history",
    "document",
    "graph_entity",
    "graph_ident",
    "graph_name",
    "graph_out",
    "graph_in",
    "graph_slot",
    "graph_source",
    "graph_support",
    "graph_ingested",
    "working_owner",
    "consolidation_run",
    "consolidation_change",
    "consolidation_entity_change",
    "consolidation_plan",
    "fact_feedback",
    "memory_usage",
)
