"""Memory that maintains itself: consolidation of one owner's facts.

``memory.consolidate(user_id=..., agent_id=..., dry_run=...)`` merges facts that say
the same thing and supersedes values a later one contradicts (the rules:
``memorybank.consolidation.rules``); ``memory.consolidation`` lists the runs, reports
what each changed and why, and undoes one exactly. ``LLMJudge`` (given as
``Memory(..., judge=...)``) decides, with a chat model, what the rules cannot.
See docs/consolidation.md.
"""

from memorybank.consolidation.report import ConsolidationChange, ConsolidationReport
from memorybank.consolidation.rules import (
    DUPLICATE_COSINE,
    DUPLICATE_OVERLAP,
    DUPLICATE_OVERLAP_WITH_VECTORS,
)
from memorybank.core.judge import JudgeUsage, LLMJudge

__all__ = [
    "DUPLICATE_COSINE",
    "DUPLICATE_OVERLAP",
    "DUPLICATE_OVERLAP_WITH_VECTORS",
    "ConsolidationChange",
    "ConsolidationReport",
    "JudgeUsage",
    "LLMJudge",
]
