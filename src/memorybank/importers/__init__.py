"""Importers: move memory from another system into memorybank.

One module per system, each reading that system's own storage into a ``Plan``
(``memorybank.importers.plan``), which ``apply`` (a ``Memory``) or ``aapply`` (an
``AsyncMemory``) writes: ids derived from the other system's, provenance in
``metadata["source"]``, nothing added by a second run, ``dry_run=True`` to count only.

    from memorybank import Memory
    from memorybank.importers import apply, openai_agents

    plan = openai_agents.read("sessions.db", user_id="alice")
    result = apply(Memory("sqlite:///memory.db"), plan)
    print(result.describe())

Systems (``SYSTEMS``): ``openai-agents`` (``SQLiteSession`` / ``SQLAlchemySession``
databases), ``langgraph`` (SQLite and PostgreSQL checkpointers, a ``BaseStore``), ``mem0``
(Mem0 OSS: its vector store and history database) and ``letta`` (agent files, ``.af``),
each in the module of its name (``memorybank.importers.openai_agents``, ...).

docs/importers.md says what each maps to what, and what has no equivalent.
"""

from memorybank.importers._async.apply import apply as aapply
from memorybank.importers._sync.apply import apply
from memorybank.importers.plan import ImportResult, Plan, Unmapped

__all__ = ["SYSTEMS", "ImportResult", "Plan", "Unmapped", "aapply", "apply"]

#: The systems ``memorybank import-from`` reads, and the module of each.
SYSTEMS = {
    "openai-agents": "memorybank.importers.openai_agents",
    "langgraph": "memorybank.importers.langgraph",
    "mem0": "memorybank.importers.mem0",
    "letta": "memorybank.importers.letta",
}
