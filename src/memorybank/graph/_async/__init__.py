"""``memory.graph``: a temporal, scoped knowledge graph on the store contract.

The graph is written once, here, above the stores: every store that keeps
records (``record_put``/``get``/``delete``/``list`` and the batch reads
``record_get_many``, ``record_list_keys``, ``record_list_keys_by_kind``,
``record_list_keys_linked``, ``record_list_links``, ``record_page``) keeps a
graph, with the same answers everywhere. Storage, one record kind per role:

``graph_entity``
    An entity (id: a new ULID). ``agent_id``/``user_id`` are its owner;
    ``content`` is its name, aliases and observations (what keyword search
    reads); ``data`` holds the fields, with ``obs_provenance`` (observation ->
    entry ids it came from).
``graph_ident``
    The uniqueness lock of one (agent, user, type, normalised name): its id is
    derived from those (``compound_id``), its data names the entity. A new
    entity is written in one atomic ``record_put`` with its ident, guarded on
    the ident's absence, so two concurrent adds of one name make one entity
    (the loser re-reads and merges).
``graph_name``
    One per normalised name and alias of an entity (``key`` = the normalised
    text, through ``compound_id`` when longer than a key may be):
    ``find_entities(name=)`` is one indexed ``record_list_keys``.
``graph_out`` / ``graph_in``
    A relation, stored twice in one atomic write with the same id and data:
    ``key`` = source id in ``graph_out`` and target id in ``graph_in``, so one
    breadth-first level is one ``record_list_keys_linked`` of both directions
    (with the entities at the far ends).
``graph_slot``
    One per (owner, source, relation type). Every write of a relation is
    guarded on its slot's revision and bumps it, so functional closing and the
    (source, type, target) dedupe are race-free (``_cas.retry_conflicts``).
``graph_source``
    Provenance links (``key`` = entry id) from an entry to the entities and
    relations derived from it: ``entries.delete(..., cascade_facts=True)``
    finds them without a scan.
``graph_support``
    ``key`` = a relation id; names an ``inferred`` relation it supports, which
    is deleted when the support is invalidated, closed or deleted.

Scope: a relation is owned by the user (agent) it was added with, else by the
one private endpoint (a relation touching an entity private to a user is
private to that user). Reads act for the handle's principal or the one given;
naming nobody reads shared nodes only (never the unscoped read). A relation is
visible when it and both endpoints are; a by-id verb on something invisible
behaves exactly like a missing id.

Time: reads return what holds now (``valid_at`` or else ``created_at`` <= now <
``invalid_at``); ``as_of=`` asks for another valid time; ``include_invalid=True``
returns history too. ``delete_*`` removes for good.

Code, one concern per module, composed into ``AsyncGraph`` here: ``records``
(the kinds above and records <-> values), ``checks`` (argument validation),
``core`` (scope and the scoped reads every verb shares), ``entities``,
``lookup`` (find and search), ``relations``, ``traversal`` (neighbors,
traverse), ``paths`` (shortest_path), ``inference``, ``whole`` (stats, clear),
``context`` (context_block) and ``ingest`` (extraction and its undo).
"""

from __future__ import annotations

from memorybank.graph._async.context import ContextVerbs
from memorybank.graph._async.entities import EntityVerbs
from memorybank.graph._async.inference import InferenceVerbs
from memorybank.graph._async.ingest import IngestVerbs
from memorybank.graph._async.lookup import LookupVerbs
from memorybank.graph._async.paths import PathVerbs
from memorybank.graph._async.records import (
    ENTITY,
    GRAPH_KINDS,
    IDENT,
    IN,
    NAME,
    OUT,
    RULES,
    SLOT,
    SOURCE,
    SUPPORT,
    normalise,
)
from memorybank.graph._async.relations import RelationVerbs
from memorybank.graph._async.traversal import TraversalVerbs
from memorybank.graph._async.whole import WholeGraphVerbs

__all__ = [
    "ENTITY",
    "GRAPH_KINDS",
    "IDENT",
    "IN",
    "NAME",
    "OUT",
    "RULES",
    "SLOT",
    "SOURCE",
    "SUPPORT",
    "AsyncGraph",
    "normalise",
]


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
