"""``memory.graph``: a temporal, scoped knowledge graph, written once above the stores.

Its record kinds, scope and time rules are in docs/graph.md ("Storage", "Scope",
"Time and functional types"). Code, one concern per module, composed into
``AsyncGraph`` here: ``records`` (the kinds and records <-> values), ``checks``
(argument validation), ``core`` (scope and the scoped reads every verb shares),
``entities``, ``lookup`` (find and search), ``relations``, ``traversal``
(neighbors, traverse), ``paths`` (shortest_path), ``inference``, ``whole`` (stats,
clear), ``context`` (context_block) and ``ingest`` (extraction and its undo).
"""

from __future__ import annotations

from memorybank.graph._async.context import ContextVerbs
from memorybank.graph._async.entities import EntityVerbs
from memorybank.graph._async.inference import InferenceVerbs
from memorybank.graph._async.ingest import IngestVerbs
from memorybank.graph._async.lookup import LookupVerbs
from memorybank.graph._async.paths import PathVerbs
from memorybank.graph._async.records import normalise
from memorybank.graph._async.relations import RelationVerbs
from memorybank.graph._async.traversal import TraversalVerbs
from memorybank.graph._async.whole import WholeGraphVerbs

__all__ = ["AsyncGraph", "normalise"]


class AsyncGraph(ContextVerbs, PathVerbs, InferenceVerbs, IngestVerbs, WholeGraphVerbs):
    """``memory.graph``: entities, relations, traversal, time and inference.

    Every verb takes ``agent_id=``/``user_id=``: given, the caller sees its own
    and shared nodes; left out, the handle's principal applies, else nobody
    (shared nodes only). Writes own what they create by the same rule. A by-id
    verb on an entity or relation the caller may not see behaves exactly like a
    missing id. ``functional_types`` is shared by every handle of the memory:
    ``.add(...)`` / ``.discard(...)`` take effect on later writes.
    """

    # The public verbs, each defined (and documented) in the module of its concern,
    # are named here too: the class itself lists its whole surface (the isolation
    # suite reads it from here, and tests/graph/test_package.py keeps it complete).
    add_entity = EntityVerbs.add_entity
    get_entity = EntityVerbs.get_entity
    update_entity = EntityVerbs.update_entity
    add_observations = EntityVerbs.add_observations
    delete_observations = EntityVerbs.delete_observations
    delete_entity = EntityVerbs.delete_entity
    merge_entities = EntityVerbs.merge_entities
    find_entities = LookupVerbs.find_entities
    search_entities = LookupVerbs.search_entities
    add_relation = RelationVerbs.add_relation
    get_relation = RelationVerbs.get_relation
    update_relation = RelationVerbs.update_relation
    invalidate_relation = RelationVerbs.invalidate_relation
    delete_relation = RelationVerbs.delete_relation
    relations = RelationVerbs.relations
    neighbors = TraversalVerbs.neighbors
    traverse = TraversalVerbs.traverse
    shortest_path = PathVerbs.shortest_path
    infer = InferenceVerbs.infer
    stats = WholeGraphVerbs.stats
    clear = WholeGraphVerbs.clear
    context_block = ContextVerbs.context_block
    ingest = IngestVerbs.ingest
    pending = IngestVerbs.pending
    drain = IngestVerbs.drain
