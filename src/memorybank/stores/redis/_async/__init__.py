"""AsyncRedisStore: threads, entries, branches, records and search in plain Redis 7.

No modules: keyword (BM25) and vector (exact cosine) search rank in the client.

Key layout (``P`` is the prefix, default ``"memorybank:"``; every id inside a
key is escaped: ``%``, ``:``, ``{`` and ``}`` become ``%25``, ``%3A``, ``%7B``,
``%7D``, so keys are unambiguous and a hash tag can never be broken)::

    P{tenant:thread}:t          hash   the thread: id ten u a ti m s c up cb
                                       (user, agent, title absent = None; times are
                                       int microseconds) + one field "b:<branch>"
                                       per branch -> JSON [created, from_branch, from_entry]
                                       + one field "v:<model>" -> "1" per vector model
    P{tenant:thread}:z:<branch> zset   score = position, member = entry JSON
                                       [position, created, id, role, content, name,
                                       tool_calls, tool_call_id, metadata, state, tokens,
                                       idem_key(, fingerprint)] (the script splices the
                                       position in; the payload fingerprint only on keyed
                                       entries -- members written before it have none and
                                       match any payload, so the layout version is unchanged)
    P{tenant:thread}:h:<branch> hash   "i:<entry id>" -> position, "k:<idem key>" -> entry id
    P{tenant:thread}:v:<model>  hash   entry id -> float32 unit vector (little-endian)
    P{tenant}:threads           zset   score = updated_at, member = thread id
    P{tenant}:u:<user>          zset   the same, for the threads owned by <user>
    P{tenant}:u0                set    ids of the threads without a user
    P{tenant}:ev:<model>        hash   entry id -> thread id (locates an entry's vector)
    P{tenant}:r:<kind>          hash   record id -> JSON [agent, user, key, content,
                                       data, created, updated, expires, revision]
                                       (revision absent: 0)
    P{tenant}:ru:<kind>:<user>  set    ids of <user>'s records of <kind>
    P{tenant}:rn:<kind>         set    ids of the records of <kind> without a user
    P{tenant}:rk:<user>         set    kinds <user> has records of
    P{tenant}:rv:<kind>:<model> hash   record id -> float32 unit vector
    P{tenant}:rvm:<kind>        set    models with vectors of <kind>
    P{tenant:run}:w             hash   working memory of a run (key -> JSON text)
    P{tenant:run}:s             hash   snapshot of a run: v (JSON text), o (owner), at
    P{tenant}:su:<user>         set    run ids whose snapshot <user> owns
    P{tenant}:sum:<agent>       list   summaries, oldest first (JSON [id, user, content, at])
    P{tenant}:sumu:<user>       set    agents holding summaries of <user>
    P{tenant}:fe                stream the change feed's events (``_events``)
    P{tenant}:fm                hash   the change feed's floor
    Pevents                     hash   the change feed's switch (absent: off)
    Pschema_version             string layout version (index into ``MIGRATIONS``): 4

Scale-out: every key of a thread carries the hash tag ``{tenant:thread}``, so a
thread lives in one Redis Cluster slot and every thread operation is one Lua script
over that slot. A real cluster is opened with ``redis+cluster://host:port``,
``from_url(url, cluster=True)`` or a ``RedisCluster`` client (cluster mode is then
on by itself); see ``docs/redis-cluster.md``. The tenant indexes (``threads``,
``u:``, ``u0``) live in the ``{tenant}`` slot. On a single node (the default) the
scripts update them in the same atomic script. With ``cluster=True`` the scripts
touch only the thread's slot and the store updates the indexes with a second round
trip right after (not atomic with the write: a crash in between leaves an index
score stale or a member pointing at a deleted thread, which readers tolerate and
clean up). Snapshot owner sets and summaries are in the tenant slot;
``snapshot_save`` is one script that checks the owner and writes the snapshot (and,
on a single node, its owner set; with ``cluster=True`` the set is written first, by
a command of its own). Records, their owner sets and vectors all live in the tenant
slot, so ``record_put`` (a whole batch), ``record_delete`` and the records part of
``forget_user`` are one script each, which also checks a ``RecordGuard`` (the stored
revision) before writing. Entry vectors live in their thread's slot (written,
expired and deleted with it); the ``ev:`` index that finds them by entry id is in
the tenant slot, updated by the same script on a single node, by a second command
with ``cluster=True`` (stale members -- an expired thread's -- are dropped when
``vector_get`` meets them).

Position assignment: ``entry_append`` is one ``EVALSHA`` (loaded once,
reloaded on ``NOSCRIPT``): it checks the thread, owner and branch, resolves
idempotency keys, assigns ``max position + 1`` per entry (the branch's highest
score), writes the entries, bumps ``updated_at``, refreshes TTLs and returns
status, positions and the thread in one round trip. Redis runs scripts one at a
time, so concurrent appenders (any number of processes) never interleave a
batch, lose or duplicate a position. Positions are gap-free for appends; deleted
entries leave gaps, and after deleting the newest entries (rewind) positions
are reused, exactly as in the reference store.

Reads: "last N" is ``ZREVRANGE`` by rank (O(log n + N)), whatever the thread's
length or branching depth (branches are copies, made with ``COPY``).
``before``/``after`` filters scan newest-first inside the script (cost grows with
the entries skipped). Every read is one round trip.

Compaction: ``entry_compact`` is one script on the thread's slot: it compares
the ids at positions ``<= through_position`` with the expected ones, removes
them and splices the summary in at ``through_position``, or changes nothing.
``entry_update`` reads the members, rebuilds their JSON in Python (a Lua
re-encode would not keep it byte-exact, e.g. ``[]`` vs ``{}``) and replaces
them all in one script that first checks every member is still the one read
(compare-and-set; re-read and retried when a writer got in between).

Search: Redis 7 without modules has no text or vector index, so both searches
read the scope and rank in the client. The scope is found through the indexes:
the asking user's threads (``u:<user>``) plus the shared ones (``u0``), every
thread of the tenant without a ``visible_to``, one thread with ``thread_id``;
records through their owner sets. ``text_search`` reads every entry (all
branches) of those threads and the records' texts -- one pipelined script per
thread -- and ranks them with ``memorybank.stores.keyword.bm25.BM25Index`` (the
in-memory store's analyzer and scores). ``vector_search`` reads the scope's
vectors of the model and ranks them exactly with numpy
(``memorybank.stores.vectors.exact.top_k``). The cost is linear in the scope and
paid on every query (measured with hiredis on a loaded 2-core machine):
``text_search`` ~55 ms for 1,000 entries, ~0.36 s for 5,000, ~1.3 s for 20,000
(analysing the texts for BM25 is most of it); ``vector_search`` (384 dims)
~25 ms, ~0.23 s and ~0.5 s. Fine for one thread or a user's recent threads (up
to a few thousand texts); past ~10,000 texts per query (an unscoped search of a
big tenant, a user with years of history) use a store with a real index
(PostgreSQL, SQLite FTS5) or Redis Stack's search module (not used here).
Records are scanned the same way (``record_list`` reads the kind's records in
the owner scope, then filters and sorts in the client). The batch reads are one
round trip each: ``record_get_many`` is ``HMGET`` in one pipeline;
``record_list_keys`` and ``record_page`` are one script each that reads the
kind's records in the owner scope and keeps the matching keys, or the
candidates of the page (Lua compares times as doubles, so it keeps a margin
and the client filters and orders exactly): the layout has no key or time
index, so their cost grows with the scope, not only with the answer.

TTL: ``ttl`` (seconds) expires a whole thread -- record, branches, entries,
idempotency keys and entry vectors -- together: one script sets the same deadline on every key and
each write refreshes it. ``ttl=None`` keeps data forever (and leaves a deadline
set earlier by another configuration in place until the next write with a
TTL; an entry vector written then takes the thread's remaining deadline).
An expired thread's index members are removed lazily by ``thread_list``,
the searches and ``forget_user``. Records and their vectors are not
thread-scoped: they never expire (``expires_at`` is stored for the caller).
``working_ttl`` / ``snapshot_ttl`` expire working memory (refreshed on each
set) and snapshots (on each save). Snapshot owner sets and
summary user sets are cleaned lazily by ``forget_user``.

Durability: a write has returned once Redis applied it in memory; whether it
survives a server crash depends on the server's persistence (``appendonly yes``
with ``appendfsync always`` for the strictest, ``everysec`` loses up to a
second). The store does not change server configuration.

Differences from the contract: none known. Vectors are binary, so a client
given to the constructor must not decode responses (``decode_responses=False``,
as ``from_url`` builds it). The client given to the
constructor keeps its own retry policy; ``from_url`` builds one without command
retries (see ``memorybank.stores.redis.compat``).

Modules: ``_base`` (client, options, script calls, migrations, the tenant indexes
kept apart with ``cluster=True``), ``_threads`` (threads, branches), ``_entries``
(entries, compaction), ``_runs`` (working memory, snapshots), ``_scope`` (what a
listing or search reads), ``_records`` (records, summaries), ``_search`` (keyword
and vector search, vectors), ``_forget`` (``forget_user``), ``_events`` (the change
feed); each is a mixin of
``AsyncRedisStore`` below. The I/O-free parts are shared with the sync twin:
the Lua scripts (``memorybank.stores.redis.lua``, ``_redis_lua_threads``,
``_redis_lua_tenant``) and the key and value encoding (``_redis_codec``).
"""

from __future__ import annotations

from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.redis._async._atomic import RedisAtomic
from memorybank.stores.redis._async._base import MIGRATIONS
from memorybank.stores.redis._async._entries import RedisEntries
from memorybank.stores.redis._async._events import RedisEvents
from memorybank.stores.redis._async._forget import RedisForget
from memorybank.stores.redis._async._records import RedisRecords
from memorybank.stores.redis._async._runs import RedisRuns
from memorybank.stores.redis._async._search import RedisSearch
from memorybank.stores.redis._async._threads import RedisThreads

__all__ = ["MIGRATIONS", "AsyncRedisStore"]


class AsyncRedisStore(
    RedisThreads,
    RedisEntries,
    RedisRuns,
    RedisRecords,
    RedisSearch,
    RedisForget,
    RedisEvents,
    RedisAtomic,
):
    """Memory in Redis 7: one Lua script per thread operation, TTLs per thread.

    ``AsyncRedisStore(client)`` uses a ``redis.asyncio.Redis`` or
    ``redis.asyncio.RedisCluster`` the caller owns (``close()`` leaves it open);
    ``AsyncRedisStore.from_url(url)`` owns its client. A Redis Cluster is
    ``redis+cluster://host:port`` (any one node; ``rediss+cluster://`` with TLS),
    ``from_url(url, cluster=True)`` or a ``RedisCluster`` client. ``cluster=True``
    with a plain client keeps the cluster-safe layout on a single node (each
    script touches one hash slot; the tenant indexes are updated apart).
    """

    capabilities = frozenset(
        {
            Capability.ATOMIC,
            Capability.TTL,
            Capability.DURABLE,
            Capability.MULTI_PROCESS,
            Capability.RUN_STATE,
            Capability.TEXT_SEARCH,
            Capability.VECTOR_SEARCH,
            Capability.EVENTS,  # not with cluster=True (``_events``)
        }
    )
