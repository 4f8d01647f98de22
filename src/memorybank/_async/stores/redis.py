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
    Pschema_version             string layout version (index into ``MIGRATIONS``): 2

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

Position assignment: ``append_entries`` is one ``EVALSHA`` (loaded once,
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

Compaction: ``compact_entries`` is one script on the thread's slot: it compares
the ids at positions ``<= through_position`` with the expected ones, removes
them and splices the summary in at ``through_position``, or changes nothing.
``update_entries`` reads the members, rebuilds their JSON in Python (a Lua
re-encode would not keep it byte-exact, e.g. ``[]`` vs ``{}``) and replaces
them all in one script that first checks every member is still the one read
(compare-and-set; re-read and retried when a writer got in between).

Search: Redis 7 without modules has no text or vector index, so both searches
read the scope and rank in the client. The scope is found through the indexes:
the asking user's threads (``u:<user>``) plus the shared ones (``u0``), every
thread of the tenant without a ``visible_to``, one thread with ``thread_id``;
records through their owner sets. ``text_search`` reads every entry (all
branches) of those threads and the records' texts -- one pipelined script per
thread -- and ranks them with ``memorybank.retrieval.bm25.BM25Index`` (the
in-memory store's analyzer and scores). ``vector_search`` reads the scope's
vectors of the model and ranks them exactly with numpy
(``memorybank.stores._vectors.top_k``). The cost is linear in the scope and
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
An expired thread's index members are removed lazily by ``list_threads``,
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
retries (see ``memorybank.stores._redis_compat``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis.exceptions

from memorybank._async.stores.base import (
    UNSET,
    AppendResult,
    AsyncStore,
    NewEntry,
    Record,
    RecordGuard,
    SearchHit,
    Unset,
    VectorItem,
    Visibility,
)
from memorybank._idempotency import key_reused
from memorybank.errors import (
    ConfigurationError,
    Conflict,
    MemoryBankError,
    NotFound,
    StoreClosed,
    StoreError,
    StoreUnavailable,
    ThreadForbidden,
)
from memorybank.records import Branch, Entry, Summary, Thread
from memorybank.stores._redis_compat import (
    CLUSTER_SCHEMES,
    AsyncRedisClient,
    AsyncRedisClusterClient,
    aconnect_redis,
    aconnect_redis_cluster,
)
from memorybank.stores._sql import (
    dump,
    entry_payload,
    from_us,
    to_us,
    tool_calls_value,
    unit_vector_bytes,
    vector_from_bytes,
)
from memorybank.stores._types import visible

if TYPE_CHECKING:  # numpy loads with the first vector search, not with the store
    from memorybank.stores._vectors import CachedRows

__all__ = ["MIGRATIONS", "AsyncRedisStore"]

#: Layout migrations: ``MIGRATIONS[i]`` is the Lua body that takes the data from
#: version ``i`` to ``i + 1`` (run atomically with the version bump). Version 1
#: is the initial layout, which needs nothing created. Version 2 adds records,
#: vectors and the ``u0`` index of threads without a user; the store backfills
#: ``u0`` from the tenant indexes (SCAN, idempotent) before running its body.
#: Version 3 adds the vector cache's stamps and logs (``vs:``, ``vl:``), backfilled
#: by the client from the ``ev:`` and ``rv:`` hashes (SCAN, idempotent) first.
MIGRATIONS: list[str] = [
    "",
    "-- v2: records, vectors, u0 (backfilled by the client first)\n",
    "-- v3: vector stamps and logs (backfilled by the client first)\n",
]

#: Chunk size of pipelines and of the argument lists sent to one script.
_CHUNK = 500

_THREAD_FIELDS = ("id", "ten", "u", "a", "ti", "m", "s", "c", "up", "cb")

# -- Lua ---------------------------------------------------------------------------
# Every thread script: KEYS[1] = the thread hash, ARGV[1] = the thread's key base
# ("P{tenant:thread}:"), ARGV[2] = TTL in ms ("0": none), ARGV[3] = the tenant index
# base ("P{tenant}:"; "" when the indexes are maintained outside the script).

_PRELUDE = r"""
local base, ttl, idx = ARGV[1], ARGV[2], ARGV[3]
local tkey = KEYS[1]
local function esc(s)
  return (string.gsub(s, '[%%:{}]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local function zkey(b) return base .. 'z:' .. esc(b) end
local function hkey(b) return base .. 'h:' .. esc(b) end
local function thread()
  return redis.call('HMGET', tkey, 'id', 'ten', 'u', 'a', 'ti', 'm', 's', 'c', 'up', 'cb')
end
local function branches()
  local names = {}
  for _, f in ipairs(redis.call('HKEYS', tkey)) do
    if string.sub(f, 1, 2) == 'b:' then names[#names + 1] = string.sub(f, 3) end
  end
  return names
end
local function vkey(m) return base .. 'v:' .. esc(m) end
local function touch()
  if ttl ~= '0' then
    redis.call('PEXPIRE', tkey, ttl)
    for _, f in ipairs(redis.call('HKEYS', tkey)) do
      local kind, name = string.sub(f, 1, 2), string.sub(f, 3)
      if kind == 'b:' then
        redis.call('PEXPIRE', zkey(name), ttl)
        redis.call('PEXPIRE', hkey(name), ttl)
      elseif kind == 'v:' then
        redis.call('PEXPIRE', vkey(name), ttl)
      end
    end
  end
end
local function index(t, updated, created)
  if idx ~= '' then
    redis.call('ZADD', idx .. 'threads', updated, t[1])
    if t[3] then
      redis.call('ZADD', idx .. 'u:' .. esc(t[3]), updated, t[1])
    elseif created then
      redis.call('SADD', idx .. 'u0', t[1])
    end
  end
end
local function forget(h, members)
  for _, m in ipairs(members) do
    local e = cjson.decode(m)
    redis.call('HDEL', h, 'i:' .. e[3])
    if e[12] ~= cjson.null then redis.call('HDEL', h, 'k:' .. e[12]) end
  end
end
local function pick(t, b)
  if b == '' then return t[10] end
  return b
end
"""

# ARGV[4] = thread id, ARGV[5] = updated_at, ARGV[6..] = field, value pairs.
_CREATE = """
if redis.call('EXISTS', tkey) == 1 then return 0 end
redis.call('HSET', tkey, unpack(ARGV, 6))
local t = thread()
redis.call('DEL', zkey(t[10]), hkey(t[10]))
touch()
index(t, ARGV[5], true)
return 1
"""

# ARGV[4] = branch ("" current), ARGV[5] = owner mode ("0" any, "1" none, "2" ARGV[6]),
# ARGV[7] = updated_at, ARGV[8..] = (idempotency key or "", entry id, entry JSON without
# its position, fingerprint or "") per entry. Returns status, branch, the thread's 10 fields,
# then per entry its position and "" (new) or the stored member (idempotent replay); or
# {'CONFLICT', key} (nothing written) when a stored key's member has another fingerprint
# (its 13th element; members without one match any payload). The thread's fields come
# back as one JSON array (one reply item instead of ten: cheaper on both sides).
_APPEND = """
local t = thread()
if not t[1] then return {'NOTFOUND'} end
local mode = ARGV[5]
if (mode == '1' and t[3]) or (mode == '2' and t[3] ~= ARGV[6]) then return {'FORBIDDEN'} end
local b = ARGV[4]
if b == '' then
  b = t[10]  -- the current branch always exists (it cannot be deleted)
elseif redis.call('HEXISTS', tkey, 'b:' .. b) == 0 then
  return {'NOBRANCH', b}
end
local z, h = zkey(b), hkey(b)
local replay = {}  -- ARGV index -> {position, member}: found before anything is written
for i = 8, #ARGV, 4 do
  local key, fp = ARGV[i], ARGV[i + 3]
  local found = key ~= '' and redis.call('HGET', h, 'k:' .. key)
  if found then
    local p = redis.call('HGET', h, 'i:' .. found)
    local m = redis.call('ZRANGEBYSCORE', z, p, p)[1]
    if fp ~= '' then
      local old = cjson.decode(m)[13]
      if type(old) == 'string' and old ~= fp then return {'CONFLICT', key} end
    end
    replay[i] = {p, m}
  end
end
local last = redis.call('ZREVRANGE', z, 0, 0, 'WITHSCORES')
local pos = 0
if last[2] then pos = tonumber(last[2]) end
redis.call('HSET', tkey, 'up', ARGV[7])
t[9] = ARGV[7]
local out = {'OK', b, cjson.encode(t)}
for i = 8, #ARGV, 4 do
  local key, id, json = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local hit = replay[i]
  if not hit and key ~= '' then  -- a key repeated in the batch: its first copy's entry
    local found = redis.call('HGET', h, 'k:' .. key)
    if found then
      local p = redis.call('HGET', h, 'i:' .. found)
      hit = {p, redis.call('ZRANGEBYSCORE', z, p, p)[1]}
    end
  end
  if hit then
    out[#out + 1] = hit[1]
    out[#out + 1] = hit[2]
  else
    pos = pos + 1
    redis.call('ZADD', z, pos, '[' .. pos .. ',' .. string.sub(json, 2))
    if key ~= '' then
      redis.call('HSET', h, 'i:' .. id, pos, 'k:' .. key, id)
    else
      redis.call('HSET', h, 'i:' .. id, pos)
    end
    out[#out + 1] = pos
    out[#out + 1] = ''
  end
end
touch()
index(t, ARGV[7])
return out
"""

# ARGV[4] = updated_at, ARGV[5] = new current branch or "", ARGV[6] = n fields to delete,
# then the n field names, then field, value pairs to set.
_UPDATE = """
local t = thread()
if not t[1] then return {'NOTFOUND'} end
if ARGV[5] ~= '' and redis.call('HEXISTS', tkey, 'b:' .. ARGV[5]) == 0 then
  return {'NOBRANCH', ARGV[5]}
end
local n = tonumber(ARGV[6])
if n > 0 then redis.call('HDEL', tkey, unpack(ARGV, 7, 6 + n)) end
if #ARGV >= 7 + n then redis.call('HSET', tkey, unpack(ARGV, 7 + n)) end
redis.call('HSET', tkey, 'up', ARGV[4])
t = thread()
touch()
index(t, ARGV[4])
local out = {'OK'}
for i = 1, 10 do out[#out + 1] = t[i] end
return out
"""

# ARGV[4] = required owner or "" (any). Returns {deleted 0/1, entries removed, owner or "",
# vectors}: the entry vectors go with the thread; their entries in the tenant's "ev:" index
# are dropped here on a single node, or returned ({model, {ids}, ...}) for the caller.
_DELETE = """
local t = redis.call('HMGET', tkey, 'id', 'u')
if not t[1] then return {0, 0, '', {}} end
if ARGV[4] ~= '' and t[2] ~= ARGV[4] then return {0, 0, '', {}} end
local n, gone = 0, {}
for _, f in ipairs(redis.call('HKEYS', tkey)) do
  local kind, name = string.sub(f, 1, 2), string.sub(f, 3)
  if kind == 'b:' then
    n = n + redis.call('ZCARD', zkey(name))
    redis.call('DEL', zkey(name), hkey(name))
  elseif kind == 'v:' then
    local ids = redis.call('HKEYS', vkey(name))
    if idx ~= '' then
      for i = 1, #ids, 1000 do
        redis.call('HDEL', idx .. 'ev:' .. esc(name), unpack(ids, i, math.min(i + 999, #ids)))
      end
      local log = idx .. 'vl:entry:' .. esc(name)
      for _, id in ipairs(ids) do redis.call('ZREM', log, t[1] .. '\0' .. id) end
      redis.call('HINCRBY', idx .. 'vs:entry:' .. esc(name), 'g', 1)
    else
      gone[#gone + 1] = name
      gone[#gone + 1] = ids
    end
    redis.call('DEL', vkey(name))
  end
end
redis.call('DEL', tkey)
if idx ~= '' then
  redis.call('ZREM', idx .. 'threads', t[1])
  if t[2] then
    redis.call('ZREM', idx .. 'u:' .. esc(t[2]), t[1])
  else
    redis.call('SREM', idx .. 'u0', t[1])
  end
end
return {1, n, t[2] or '', gone}
"""

# ARGV[4] = branch, ARGV[5] = limit (-1: all), ARGV[6] = offset,
# ARGV[7] = before ("" none), ARGV[8] = after ("" none). Returns status, branch, the
# thread (JSON array), then the entries newest first.
_LIST = """
local t = thread()
if not t[1] then return {'NOTFOUND'} end
local b = pick(t, ARGV[4])
local z = zkey(b)
local limit, offset = tonumber(ARGV[5]), tonumber(ARGV[6])
local out = {'OK', b, cjson.encode(t)}
if limit == 0 then return out end
if ARGV[7] == '' and ARGV[8] == '' then
  local stop = -1
  if limit > 0 then stop = offset + limit - 1 end
  for _, v in ipairs(redis.call('ZREVRANGE', z, offset, stop)) do
    out[#out + 1] = v
  end
  return out
end
local before, after = tonumber(ARGV[7]), tonumber(ARGV[8])
local start, chunk, skipped, taken = 0, 256, 0, 0
while true do
  local rows = redis.call('ZREVRANGE', z, start, start + chunk - 1)
  if #rows == 0 then return out end
  for i = 1, #rows do
    local c = tonumber(string.match(rows[i], '^%[%d+,(%-?%d+)'))
    if (before == nil or c < before) and (after == nil or c > after) then
      if skipped < offset then
        skipped = skipped + 1
      else
        out[#out + 1] = rows[i]
        taken = taken + 1
        if limit > 0 and taken >= limit then return out end
      end
    end
  end
  start = start + chunk
end
"""

# ARGV[4] = branch, ARGV[5] = entry id. Returns {} or {branch, member}.
_GET_ENTRY = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return {} end
local b = ARGV[4]
if b == '' then b = t[2] end
local p = redis.call('HGET', hkey(b), 'i:' .. ARGV[5])
if not p then return {} end
return {b, redis.call('ZRANGEBYSCORE', zkey(b), p, p)[1]}
"""

# ARGV[4] = branch, ARGV[5..] = entry ids. Returns -1 (no thread) or how many went.
_DELETE_ENTRIES = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return -1 end
local b = ARGV[4]
if b == '' then b = t[2] end
local z, h = zkey(b), hkey(b)
local n = 0
for i = 5, #ARGV do
  local p = redis.call('HGET', h, 'i:' .. ARGV[i])
  if p then
    forget(h, redis.call('ZRANGEBYSCORE', z, p, p))
    redis.call('ZREMRANGEBYSCORE', z, p, p)
    n = n + 1
  end
end
touch()
return n
"""

# ARGV[4..] = entry ids deleted from a branch (none: every entry vector of the thread).
# Deletes the vectors of those no branch holds any more (a fork copies entries with their
# ids: a vector goes with the last copy); on a single node also their "ev:" index fields
# and log members (and bumps the generation); returns {model, {ids}, ...} of what went.
_SWEEP_VECTORS = """
local tid = redis.call('HGET', tkey, 'id')
if not tid then return {} end
local names = branches()
local out = {}
for _, f in ipairs(redis.call('HKEYS', tkey)) do
  if string.sub(f, 1, 2) == 'v:' then
    local m = string.sub(f, 3)
    local v = vkey(m)
    local cands = {}
    if #ARGV >= 4 then
      for i = 4, #ARGV do cands[#cands + 1] = ARGV[i] end
    else
      cands = redis.call('HKEYS', v)
    end
    local gone = {}
    for _, id in ipairs(cands) do
      local held = false
      for _, b in ipairs(names) do
        if redis.call('HEXISTS', hkey(b), 'i:' .. id) == 1 then
          held = true
          break
        end
      end
      if not held and redis.call('HDEL', v, id) == 1 then gone[#gone + 1] = id end
    end
    if #gone > 0 then
      out[#out + 1] = m
      out[#out + 1] = gone
      if idx ~= '' then
        local e, log = idx .. 'ev:' .. esc(m), idx .. 'vl:entry:' .. esc(m)
        for _, id in ipairs(gone) do
          redis.call('HDEL', e, id)
          redis.call('ZREM', log, tid .. '\0' .. id)
        end
        redis.call('HINCRBY', idx .. 'vs:entry:' .. esc(m), 'g', 1)
      end
    end
  end
end
return out
"""

# ARGV[4] = branch, ARGV[5] = entry id. Returns -1 (no thread), -2 (no entry) or how many went.
_TRUNCATE = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return -1 end
local b = ARGV[4]
if b == '' then b = t[2] end
local z, h = zkey(b), hkey(b)
local p = redis.call('HGET', h, 'i:' .. ARGV[5])
if not p then return -2 end
local doomed = redis.call('ZRANGEBYSCORE', z, '(' .. p, '+inf')
forget(h, doomed)
redis.call('ZREMRANGEBYSCORE', z, '(' .. p, '+inf')
touch()
return #doomed
"""

# ARGV[4] = branch. Returns -1 (no thread) or how many went.
_CLEAR = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return -1 end
local b = ARGV[4]
if b == '' then b = t[2] end
local n = redis.call('ZCARD', zkey(b))
redis.call('DEL', zkey(b), hkey(b))
touch()
return n
"""

# ARGV[4] = branch. Returns -1 (no thread) or the count.
_COUNT = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return -1 end
local b = ARGV[4]
if b == '' then b = t[2] end
return redis.call('ZCARD', zkey(b))
"""

# ARGV[4] = name, ARGV[5] = from branch, ARGV[6] = from entry or "", ARGV[7] = branch JSON.
_CREATE_BRANCH = """
if redis.call('EXISTS', tkey) == 0 then return 'NOTFOUND' end
local name, src = ARGV[4], ARGV[5]
if redis.call('HEXISTS', tkey, 'b:' .. src) == 0 then return 'NOSOURCE' end
if redis.call('HEXISTS', tkey, 'b:' .. name) == 1 then return 'CONFLICT' end
local p = false
if ARGV[6] ~= '' then
  p = redis.call('HGET', hkey(src), 'i:' .. ARGV[6])
  if not p then return 'NOENTRY' end
end
local dz, dh = zkey(name), hkey(name)
redis.call('DEL', dz, dh)
redis.call('COPY', zkey(src), dz)
redis.call('COPY', hkey(src), dh)
if p then
  forget(dh, redis.call('ZRANGEBYSCORE', dz, '(' .. p, '+inf'))
  redis.call('ZREMRANGEBYSCORE', dz, '(' .. p, '+inf')
end
redis.call('HSET', tkey, 'b:' .. name, ARGV[7])
touch()
return 'OK'
"""

# ARGV[4] = name. Returns -1 (no thread), -2 (current branch), 0 (absent) or 1.
_DELETE_BRANCH = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return -1 end
if t[2] == ARGV[4] then return -2 end
if redis.call('HDEL', tkey, 'b:' .. ARGV[4]) == 0 then return 0 end
redis.call('DEL', zkey(ARGV[4]), hkey(ARGV[4]))
touch()
return 1
"""

# ARGV[4] = branch, ARGV[5] = through position, ARGV[6] = updated_at, ARGV[7] = summary id,
# ARGV[8] = summary idempotency key, ARGV[9] = summary JSON without its position ("" none),
# ARGV[10..] = the expected ids. Returns status (OK, NOTFOUND, NOBRANCH, STALE) [+ thread].
_COMPACT = """
local t = thread()
if not t[1] then return {'NOTFOUND'} end
local b, through = ARGV[4], ARGV[5]
if redis.call('HEXISTS', tkey, 'b:' .. b) == 0 then return {'NOBRANCH'} end
local z, h = zkey(b), hkey(b)
local doomed = redis.call('ZRANGEBYSCORE', z, '-inf', through)
if #doomed ~= #ARGV - 9 then return {'STALE'} end
for i, m in ipairs(doomed) do
  if cjson.decode(m)[3] ~= ARGV[9 + i] then return {'STALE'} end
end
forget(h, doomed)
redis.call('ZREMRANGEBYSCORE', z, '-inf', through)
if ARGV[9] ~= '' then
  redis.call('ZADD', z, through, '[' .. through .. ',' .. string.sub(ARGV[9], 2))
  redis.call('HSET', h, 'i:' .. ARGV[7], through)
  if ARGV[8] ~= '' then redis.call('HSET', h, 'k:' .. ARGV[8], ARGV[7]) end
end
redis.call('HSET', tkey, 'up', ARGV[6])
t[9] = ARGV[6]
touch()
index(t, ARGV[6])
local out = {'OK'}
for i = 1, 10 do out[#out + 1] = t[i] end
return out
"""

# ARGV[4] = branch, ARGV[5..] = entry ids. Returns {'NOTFOUND'} or {'OK', member or nil...}.
_GET_MEMBERS = """
if redis.call('EXISTS', tkey) == 0 then return {'NOTFOUND'} end
local z, h = zkey(ARGV[4]), hkey(ARGV[4])
local out = {'OK'}
for i = 5, #ARGV do
  local p = redis.call('HGET', h, 'i:' .. ARGV[i])
  out[#out + 1] = (p and redis.call('ZRANGEBYSCORE', z, p, p)[1]) or false
end
return out
"""

# ARGV[4] = branch, ARGV[5..] = (entry id, member read before, new member) triples: all
# replaced (same position) if every member is unchanged. Returns -1 (no thread),
# -2 (changed since read: retry) or the count.
_REPLACE_MEMBERS = """
if redis.call('EXISTS', tkey) == 0 then return -1 end
local z, h = zkey(ARGV[4]), hkey(ARGV[4])
local pos = {}
for i = 5, #ARGV, 3 do
  local p = redis.call('HGET', h, 'i:' .. ARGV[i])
  if not p or redis.call('ZRANGEBYSCORE', z, p, p)[1] ~= ARGV[i + 1] then return -2 end
  pos[#pos + 1] = p
end
for j, p in ipairs(pos) do
  local i = 5 + (j - 1) * 3
  redis.call('ZREM', z, ARGV[i + 1])
  redis.call('ZADD', z, p, ARGV[i + 2])
end
touch()
return #pos
"""

# Search scope of one thread. ARGV[4] = "1" to check visibility, ARGV[5] / ARGV[6] = the
# asking agent / user ("-" none, "*" any, "=<id>"), ARGV[7] = model ("": entry texts). Returns
# {'GONE'}, {'HIDDEN'}, {'OK', {id, vector, ...}} or {'OK', branch, {members}, ...}.
_SCOPE = """
local t = redis.call('HMGET', tkey, 'id', 'u', 'a')
if not t[1] then return {'GONE'} end
if ARGV[4] == '1' then
  if (ARGV[5] ~= '*' and t[3] and '=' .. t[3] ~= ARGV[5])
    or (ARGV[6] ~= '*' and t[2] and '=' .. t[2] ~= ARGV[6]) then
    return {'HIDDEN'}
  end
end
if ARGV[7] ~= '' then return {'OK', redis.call('HGETALL', vkey(ARGV[7]))} end
local out = {'OK'}
for _, b in ipairs(branches()) do
  out[#out + 1] = b
  out[#out + 1] = redis.call('ZRANGE', zkey(b), 0, -1)
end
return out
"""

# ARGV[4] = model, ARGV[5] = thread id, ARGV[6..] = (entry id, vector) pairs. Skipped
# (0) when the thread is gone; the vectors share the thread's deadline.
_PUT_VECTORS = """
if redis.call('EXISTS', tkey) == 0 then return 0 end
local m = ARGV[4]
local v = vkey(m)
redis.call('HSET', v, unpack(ARGV, 6))
redis.call('HSET', tkey, 'v:' .. m, '1')
if ttl ~= '0' then
  touch()
else
  local left = redis.call('PTTL', tkey)
  if left > 0 then redis.call('PEXPIRE', v, left) end
end
if idx ~= '' then
  local e = idx .. 'ev:' .. esc(m)
  for i = 6, #ARGV, 2 do redis.call('HSET', e, ARGV[i], ARGV[5]) end
  local seq = redis.call('HINCRBY', idx .. 'vs:entry:' .. esc(m), 'v', 1)
  local log = idx .. 'vl:entry:' .. esc(m)
  for i = 6, #ARGV, 2 do redis.call('ZADD', log, seq, ARGV[5] .. '\0' .. ARGV[i]) end
end
return 1
"""

# -- tenant scripts: KEYS[1] = any key of the tenant slot, ARGV[1] = "P{tenant}:" -----------

_TENANT_PRELUDE = r"""
local idx = ARGV[1]
local function esc(s)
  return (string.gsub(s, '[%%:{}]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local function rkey(k) return idx .. 'r:' .. esc(k) end
local function owners(k, user)
  if user == cjson.null or user == nil then return idx .. 'rn:' .. esc(k) end
  return idx .. 'ru:' .. esc(k) .. ':' .. esc(user)
end
local function drop_vectors(k, id)
  for _, m in ipairs(redis.call('SMEMBERS', idx .. 'rvm:' .. esc(k))) do
    if redis.call('HDEL', idx .. 'rv:' .. esc(k) .. ':' .. esc(m), id) == 1 then
      redis.call('ZREM', idx .. 'vl:' .. esc(k) .. ':' .. esc(m), id)
      redis.call('HINCRBY', idx .. 'vs:' .. esc(k) .. ':' .. esc(m), 'g', 1)
    end
  end
end
local function guard_ok(k, id, rev)
  if k == '' then return true end
  local cur = redis.call('HGET', rkey(k), id)
  if rev == '' then return not cur end
  return cur and (cjson.decode(cur)[9] or 0) == tonumber(rev)
end
local function chunks(cmd, key, items)
  local out = {}
  for i = 1, #items, 1000 do
    local part = redis.call(cmd, key, unpack(items, i, math.min(i + 999, #items)))
    for _, v in ipairs(part) do out[#out + 1] = v end
  end
  return out
end
local function scope_ids(mode, owner, k)
  if mode == 'all' then return redis.call('HKEYS', rkey(k)) end
  local ids = redis.call('SMEMBERS', owners(k, nil))
  if owner ~= '-' then
    for _, id in ipairs(redis.call('SMEMBERS', owners(k, string.sub(owner, 2)))) do
      ids[#ids + 1] = id
    end
  end
  return ids
end
local function admits(who, owner)
  if who == '*' or owner == cjson.null or owner == nil then return true end
  return '=' .. owner == who
end
"""

# ARGV[2..4] = guard (kind, id, revision; "" kind: none, "" revision: absent),
# ARGV[5..] = (kind, id, owner "-" / "=<user>", record JSON) per record. -1: guard failed.
_RECORD_PUT = """
if not guard_ok(ARGV[2], ARGV[3], ARGV[4]) then return -1 end
for i = 5, #ARGV, 4 do
  local kind, id, owner, json = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local old = redis.call('HGET', rkey(kind), id)
  if old then redis.call('SREM', owners(kind, cjson.decode(old)[2]), id) end
  redis.call('HSET', rkey(kind), id, json)
  if owner == '-' then
    redis.call('SADD', owners(kind, nil), id)
  else
    local user = string.sub(owner, 2)
    redis.call('SADD', owners(kind, user), id)
    redis.call('SADD', idx .. 'rk:' .. esc(user), kind)
  end
end
return 1
"""

# ARGV[2..4] = guard (as for _RECORD_PUT), ARGV[5] = kind, ARGV[6..] = distinct ids.
# Returns how many existed, -1 when the guard failed.
_RECORD_DELETE = """
if not guard_ok(ARGV[2], ARGV[3], ARGV[4]) then return -1 end
local kind, n = ARGV[5], 0
for i = 6, #ARGV do
  local old = redis.call('HGET', rkey(kind), ARGV[i])
  if old then
    redis.call('HDEL', rkey(kind), ARGV[i])
    redis.call('SREM', owners(kind, cjson.decode(old)[2]), ARGV[i])
    drop_vectors(kind, ARGV[i])
    n = n + 1
  end
end
return n
"""

# ARGV[2] = "all" | "only" (the owner's set) | "vis" (the owner's and the shared set),
# ARGV[3] = owner ("-" none, "=<user>"), ARGV[4] = model ("": no vectors), ARGV[5..] = kinds.
# Returns {kind, {id, record JSON[, vector], ...}, ...}; records without a vector of the
# model are left out.
_RECORD_SCOPE = """
local mode, owner, model = ARGV[2], ARGV[3], ARGV[4]
local out = {}
for i = 5, #ARGV do
  local kind = ARGV[i]
  local ids
  if mode == 'all' then
    ids = redis.call('HKEYS', rkey(kind))
  elseif owner == '-' then
    ids = redis.call('SMEMBERS', owners(kind, nil))
  else
    ids = redis.call('SMEMBERS', owners(kind, string.sub(owner, 2)))
    if mode == 'vis' then
      for _, id in ipairs(redis.call('SMEMBERS', owners(kind, nil))) do ids[#ids + 1] = id end
    end
  end
  local rows = {}
  if #ids > 0 then
    local records = chunks('HMGET', rkey(kind), ids)
    local vectors = {}
    if model ~= '' then
      vectors = chunks('HMGET', idx .. 'rv:' .. esc(kind) .. ':' .. esc(model), ids)
    end
    for j, id in ipairs(ids) do
      if records[j] and (model == '' or vectors[j]) then
        rows[#rows + 1] = id
        rows[#rows + 1] = records[j]
        if model ~= '' then rows[#rows + 1] = vectors[j] end
      end
    end
  end
  out[#out + 1] = kind
  out[#out + 1] = rows
end
return out
"""

# ARGV[2] = "all" | "vis" (the shared owner set, and the user's when ARGV[3] = "=<user>"),
# ARGV[3] = owner ("-" none, "=<user>"), ARGV[4] = kind, ARGV[5..] = keys. Returns
# {id, record JSON, ...} of the records in that scope whose key is one of the keys.
_RECORD_KEYS = """
local wanted = {}
for i = 5, #ARGV do wanted[ARGV[i]] = true end
local ids = scope_ids(ARGV[2], ARGV[3], ARGV[4])
local out = {}
if #ids == 0 then return out end
local records = chunks('HMGET', rkey(ARGV[4]), ids)
for j, id in ipairs(ids) do
  local json = records[j]
  if json then
    local key = cjson.decode(json)[3]
    if key ~= cjson.null and wanted[key] then
      out[#out + 1] = id
      out[#out + 1] = json
    end
  end
end
return out
"""

# ARGV[2..4] as for _RECORD_KEYS (kind in ARGV[4]), ARGV[5] / ARGV[6] = agent / user
# ("*" any, "-" shared only, "=<id>" that one or shared), ARGV[7] = cursor time (µs,
# "" none), ARGV[8] = limit. Returns {id, record JSON, ...}: the visible records from
# about the cursor on that can be among the oldest ``limit`` after it. Lua numbers are
# doubles (times past 2255 lose microseconds), so every record within SLACK µs of the
# cursor's time is returned, the cut after the limit-th later one keeps a margin of
# 2 * SLACK, and the client filters and orders exactly.
_RECORD_PAGE = """
local SLACK = 4096
local lo, hi = nil, nil
if ARGV[7] ~= '' then
  lo = tonumber(ARGV[7]) - SLACK
  hi = tonumber(ARGV[7]) + SLACK
end
local limit = tonumber(ARGV[8])
local ids = scope_ids(ARGV[2], ARGV[3], ARGV[4])
if #ids == 0 then return {} end
local records = chunks('HMGET', rkey(ARGV[4]), ids)
local out, rows = {}, {}
for j, id in ipairs(ids) do
  local json = records[j]
  if json then
    local r = cjson.decode(json)
    if admits(ARGV[5], r[1]) and admits(ARGV[6], r[2]) and (not lo or r[6] >= lo) then
      if hi and r[6] <= hi then  -- about the cursor's time: the client decides
        out[#out + 1] = id
        out[#out + 1] = json
      else
        rows[#rows + 1] = {r[6], id, json}
      end
    end
  end
end
local last = nil
if #rows > limit then
  table.sort(rows, function(a, b) return a[1] < b[1] end)
  last = rows[limit][1] + 2 * SLACK
end
for _, row in ipairs(rows) do
  if not last or row[1] <= last then
    out[#out + 1] = row[2]
    out[#out + 1] = row[3]
  end
end
return out
"""

# ARGV[2..] = (kind, id, model, vector) per item.
_RECORD_VECTORS = """
for i = 2, #ARGV, 4 do
  local kind, m = ARGV[i], ARGV[i + 2]
  local slot = esc(kind) .. ':' .. esc(m)
  redis.call('HSET', idx .. 'rv:' .. slot, ARGV[i + 1], ARGV[i + 3])
  redis.call('SADD', idx .. 'rvm:' .. esc(kind), m)
  local seq = redis.call('HINCRBY', idx .. 'vs:' .. slot, 'v', 1)
  redis.call('ZADD', idx .. 'vl:' .. slot, seq, ARGV[i + 1])
end
return 1
"""

# Cluster mode, after entry vectors were written in their thread's slot: log them.
# ARGV[2] = model, ARGV[3..] = log members (thread id NUL entry id).
_VECTOR_LOG = """
local m = ARGV[2]
local seq = redis.call('HINCRBY', idx .. 'vs:entry:' .. esc(m), 'v', 1)
for i = 3, #ARGV do redis.call('ZADD', idx .. 'vl:entry:' .. esc(m), seq, ARGV[i]) end
return seq
"""

# ARGV[2] = user. Deletes the user's records (and their vectors); returns how many.
_RECORD_FORGET = """
local user, n = ARGV[2], 0
local kinds = idx .. 'rk:' .. esc(user)
for _, kind in ipairs(redis.call('SMEMBERS', kinds)) do
  local set = owners(kind, user)
  for _, id in ipairs(redis.call('SMEMBERS', set)) do
    local old = redis.call('HGET', rkey(kind), id)
    if old and cjson.decode(old)[2] == user then
      redis.call('HDEL', rkey(kind), id)
      drop_vectors(kind, id)
      n = n + 1
    end
  end
  redis.call('DEL', set)
end
redis.call('DEL', kinds)
return n
"""

# KEYS[1] = snapshot hash, ARGV[1] = "1": check the owner, ARGV[2] = user ("-" / "=<id>"),
# ARGV[3] = value, ARGV[4] = saved at, ARGV[5] = TTL ms (0: none), ARGV[6] = the user's
# owner set ("": leave it), ARGV[7] = run id. Returns 0 (nothing written) when another
# user owns the snapshot.
_SNAPSHOT_SAVE = """
local user = nil
if ARGV[2] ~= '-' then user = string.sub(ARGV[2], 2) end
local owner = redis.call('HGET', KEYS[1], 'o')
if ARGV[1] == '1' and owner and owner ~= user then return 0 end
if ARGV[6] ~= '' then redis.call('SADD', ARGV[6], ARGV[7]) end
redis.call('DEL', KEYS[1])
if user then
  redis.call('HSET', KEYS[1], 'v', ARGV[3], 'at', ARGV[4], 'o', user)
else
  redis.call('HSET', KEYS[1], 'v', ARGV[3], 'at', ARGV[4])
end
if tonumber(ARGV[5]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
return 1
"""

# KEYS[1] = snapshot hash, ARGV[1] = "1": check the owner, ARGV[2] = user ("-" / "=<id>").
# Returns 1 deleted, 0 absent, -1 owned by another user (kept).
_SNAPSHOT_DELETE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local owner = redis.call('HGET', KEYS[1], 'o')
if ARGV[1] == '1' and owner and (ARGV[2] == '-' or owner ~= string.sub(ARGV[2], 2)) then
  return -1
end
return redis.call('DEL', KEYS[1])
"""

# KEYS[1] = snapshot hash, ARGV[1] = owner: delete it only if that user owns it.
_FORGET_SNAPSHOT = """
if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS[1] = the user's summary agent set, ARGV[1] = "P{tenant}:sum:", ARGV[2] = user.
_FORGET_SUMMARIES = """
local n = 0
for _, agent in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = ARGV[1] .. agent
  local items = redis.call('LRANGE', key, 0, -1)
  local keep = {}
  for _, s in ipairs(items) do
    if cjson.decode(s)[2] == ARGV[2] then n = n + 1 else keep[#keep + 1] = s end
  end
  if #keep < #items then
    redis.call('DEL', key)
    for i = 1, #keep, 1000 do
      redis.call('RPUSH', key, unpack(keep, i, math.min(i + 999, #keep)))
    end
  end
end
redis.call('DEL', KEYS[1])
return n
"""

# KEYS[1] = the version key, ARGV[1] = from version, ARGV[2] = to version.
_MIGRATE = """
local v = tonumber(redis.call('GET', KEYS[1]) or '0')
if v ~= tonumber(ARGV[1]) then return v end
{body}
redis.call('SET', KEYS[1], ARGV[2])
return tonumber(ARGV[2])
"""


def _with_helpers(prelude: str, body: str) -> str:
    """``body`` after the prelude's header and only the helpers it uses (transitively).

    Every ``local function`` of a prelude is a closure created on each call, so a
    script carrying helpers it never calls pays for them on every ``EVALSHA``.
    """
    head, *chunks = re.split(r"(?m)^(?=local function )", prelude)
    named = [(c.split("(", 1)[0].removeprefix("local function "), c) for c in chunks]
    text, used = body, set()
    while True:
        more = {n for n, _ in named if n not in used and re.search(rf"\b{n}\(", text)}
        if not more:
            break
        used |= more
        text = body + "".join(c for n, c in named if n in used)
    return head + "".join(c for n, c in named if n in used) + body


class _Script:
    """A Lua script run by ``EVALSHA`` (loaded on the first ``NOSCRIPT``)."""

    __slots__ = ("sha", "source")

    def __init__(self, body: str, *, prelude: str = _PRELUDE) -> None:
        self.source = _with_helpers(prelude, body) if prelude else body
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()


_S_CREATE = _Script(_CREATE)
_S_APPEND = _Script(_APPEND)
_S_UPDATE = _Script(_UPDATE)
_S_DELETE = _Script(_DELETE)
_S_LIST = _Script(_LIST)
_S_GET_ENTRY = _Script(_GET_ENTRY)
_S_DELETE_ENTRIES = _Script(_DELETE_ENTRIES)
_S_TRUNCATE = _Script(_TRUNCATE)
_S_SWEEP_VECTORS = _Script(_SWEEP_VECTORS)
_S_CLEAR = _Script(_CLEAR)
_S_COUNT = _Script(_COUNT)
_S_CREATE_BRANCH = _Script(_CREATE_BRANCH)
_S_DELETE_BRANCH = _Script(_DELETE_BRANCH)
_S_COMPACT = _Script(_COMPACT)
_S_GET_MEMBERS = _Script(_GET_MEMBERS)
_S_REPLACE_MEMBERS = _Script(_REPLACE_MEMBERS)
_S_SCOPE = _Script(_SCOPE)
_S_PUT_VECTORS = _Script(_PUT_VECTORS)
_S_RECORD_PUT = _Script(_RECORD_PUT, prelude=_TENANT_PRELUDE)
_S_RECORD_DELETE = _Script(_RECORD_DELETE, prelude=_TENANT_PRELUDE)
_S_RECORD_SCOPE = _Script(_RECORD_SCOPE, prelude=_TENANT_PRELUDE)
_S_RECORD_VECTORS = _Script(_RECORD_VECTORS, prelude=_TENANT_PRELUDE)
_S_VECTOR_LOG = _Script(_VECTOR_LOG, prelude=_TENANT_PRELUDE)
_S_RECORD_KEYS = _Script(_RECORD_KEYS, prelude=_TENANT_PRELUDE)
_S_RECORD_PAGE = _Script(_RECORD_PAGE, prelude=_TENANT_PRELUDE)
_S_RECORD_FORGET = _Script(_RECORD_FORGET, prelude=_TENANT_PRELUDE)
_S_SNAPSHOT_SAVE = _Script(_SNAPSHOT_SAVE, prelude="")
_S_SNAPSHOT_DELETE = _Script(_SNAPSHOT_DELETE, prelude="")
_S_FORGET_SNAPSHOT = _Script(_FORGET_SNAPSHOT, prelude="")
_S_FORGET_SUMMARIES = _Script(_FORGET_SUMMARIES, prelude="")

# -- encoding ------------------------------------------------------------------------


def _esc(value: str) -> str:
    """Escape an id for use inside a key (same rule as the Lua ``esc``)."""
    return value.replace("%", "%25").replace(":", "%3A").replace("{", "%7B").replace("}", "%7D")


def _unesc(value: str) -> str:
    """The id ``_esc`` escaped."""
    return value.replace("%3A", ":").replace("%7B", "{").replace("%7D", "}").replace("%25", "%")


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _opt(value: bytes | str | None) -> str | None:
    return None if value is None else _s(value)


def _thread(row: Sequence[Any]) -> Thread:
    """A ``Thread`` from the 10 values of ``_THREAD_FIELDS``."""
    return Thread(
        id=_s(row[0]),
        tenant_id=_s(row[1]),
        user_id=_opt(row[2]),
        agent_id=_opt(row[3]),
        title=_opt(row[4]),
        metadata=json.loads(row[5]),
        status=_s(row[6]),  # type: ignore[arg-type]
        created_at=from_us(int(row[7])),
        updated_at=from_us(int(row[8])),
        current_branch=_s(row[9]),
    )


def _unpack(packed: bytes | str) -> list[Any]:
    """A thread's 10 fields from the scripts' ``cjson.encode`` (absent fields are ``false``)."""
    return [None if v is False else v for v in json.loads(packed)]


def _entry_json(new: NewEntry) -> str:
    calls = tool_calls_value(new.tool_calls, new.extra, new.item)
    return dump(
        [
            to_us(new.created_at),
            new.id,
            new.role,
            new.content,
            new.name,
            calls,
            new.tool_call_id,
            new.metadata,
            new.state,
            new.token_count,
            new.idempotency_key,
            # the fingerprint goes last, and only with a key: unkeyed members stay as they were
            *([new.fingerprint] if new.idempotency_key and new.fingerprint else []),
        ]
    )


def _entry(member: bytes | str, thread_id: str, branch: str) -> Entry:
    """An ``Entry`` from a stored member ``[position, created, id, ...]``."""
    d = json.loads(member)
    calls, extra, item = entry_payload(d[6]) if d[6] else ((), {}, None)
    return Entry(
        id=d[2],
        thread_id=thread_id,
        branch=branch,
        position=d[0],
        role=d[3],
        content=d[4],
        name=d[5],
        tool_calls=calls,
        tool_call_id=d[7],
        metadata=d[8],
        state=d[9],
        token_count=d[10],
        created_at=from_us(d[1]),
        idempotency_key=d[11],
        extra=extra,
        item=item,
    )


def _glob_escape(text: str) -> str:
    """``text`` matched literally in a SCAN ``MATCH`` pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


def _log_member(thread_id: str, entry_id: str) -> str:
    """An entry vector's member in the ``vl:entry:<model>`` log (ids hold no NUL)."""
    return thread_id + "\0" + entry_id


def _who(value: str | Unset | None) -> str:
    """An agent/user id for the scripts: ``"-"`` none, ``"*"`` any, ``"=<id>"`` that one."""
    if isinstance(value, Unset):
        return "*"
    return "-" if value is None else "=" + value


def _record_json(record: Record) -> str:
    return dump(
        [
            record.agent_id,
            record.user_id,
            record.key,
            record.content,
            record.data,
            to_us(record.created_at),
            to_us(record.updated_at),
            None if record.expires_at is None else to_us(record.expires_at),
            record.revision,
        ]
    )


def _guard_args(guard: RecordGuard | None) -> list[Any]:
    """A guard for the record scripts: ``(kind, id, revision)``, ``""`` for none/absent."""
    if guard is None:
        return ["", "", ""]
    return [guard.kind, guard.id, "" if guard.revision is None else guard.revision]


def _record(kind: str, record_id: str, data: list[Any]) -> Record:
    """A ``Record`` from its decoded JSON ``[agent, user, key, content, data, ...]``."""
    return Record(
        kind=kind,
        id=record_id,
        agent_id=data[0],
        user_id=data[1],
        content=data[3],
        data=data[4],
        created_at=from_us(data[5]),
        updated_at=from_us(data[6]),
        key=data[2],
        expires_at=None if data[7] is None else from_us(data[7]),
        revision=data[8] if len(data) > 8 else 0,
    )


def _ttl_ms(seconds: float | None, name: str) -> int:
    if seconds is None:
        return 0
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
        raise ConfigurationError(f"{name} must be a positive number of seconds or None")
    return max(1, round(seconds * 1000))


_URL_OPTIONS = ("prefix", "ttl", "working_ttl", "snapshot_ttl", "timeout", "max_connections")


def _split_url(url: str) -> tuple[str, dict[str, str]]:
    """The URL without memorybank's own query options, and those options."""
    parts = urlsplit(url)
    ours: dict[str, str] = {}
    theirs: list[tuple[str, str]] = []
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        (ours.__setitem__(key, value) if key in _URL_OPTIONS else theirs.append((key, value)))
    return urlunsplit(parts._replace(query=urlencode(theirs))), ours


@contextmanager
def _translated(closed: bool) -> Iterator[None]:
    """Raise ``StoreClosed`` if closed; turn driver errors into memorybank errors."""
    if closed:
        raise StoreClosed("the store is closed")
    try:
        yield
    except MemoryBankError:
        raise
    except (
        redis.exceptions.AuthenticationError,
        redis.exceptions.AuthenticationWrongNumberOfArgsError,
        redis.exceptions.AuthorizationError,
    ) as error:
        # Bad or missing credentials: retrying cannot help.
        raise ConfigurationError(f"redis refused the connection: {error}") from error
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as error:
        raise StoreUnavailable(f"redis unavailable: {error}") from error
    except (redis.exceptions.ClusterDownError, redis.exceptions.TryAgainError) as error:
        raise StoreUnavailable(f"redis unavailable: {error}") from error
    except redis.exceptions.RedisError as error:
        raise StoreError(f"redis error: {error}") from error
    except redis.exceptions.SlotNotCoveredError as error:
        raise StoreUnavailable(f"redis cluster unavailable: {error}") from error
    except redis.exceptions.RedisClusterException as error:
        # Not a RedisError: the cluster client's own failures (no reachable node, ...).
        if "connect" in str(error).lower():
            raise StoreUnavailable(f"redis cluster unavailable: {error}") from error
        raise StoreError(f"redis cluster error: {error}") from error
    except (TimeoutError, OSError) as error:
        raise StoreUnavailable(f"redis unavailable: {error}") from error


class AsyncRedisStore(AsyncStore):
    """Memory in Redis 7: one Lua script per thread operation, TTLs per thread.

    ``AsyncRedisStore(client)`` uses a ``redis.asyncio.Redis`` or
    ``redis.asyncio.RedisCluster`` the caller owns (``close()`` leaves it open);
    ``AsyncRedisStore.from_url(url)`` owns its client. A Redis Cluster is
    ``redis+cluster://host:port`` (any one node; ``rediss+cluster://`` with TLS),
    ``from_url(url, cluster=True)`` or a ``RedisCluster`` client. ``cluster=True``
    with a plain client keeps the cluster-safe layout on a single node (each
    script touches one hash slot; the tenant indexes are updated apart).
    """

    capabilities = frozenset({"ttl"})

    def __init__(
        self,
        client: AsyncRedisClient,
        *,
        prefix: str = "memorybank:",
        ttl: float | None = None,
        working_ttl: float | None = None,
        snapshot_ttl: float | None = None,
        cluster: bool = False,
        _owns_client: bool = False,
    ) -> None:
        if not isinstance(prefix, str) or "{" in prefix or "}" in prefix:
            raise ConfigurationError("prefix must be a string without '{' or '}'")
        self._client = client
        self._prefix = prefix
        self._ttl = str(_ttl_ms(ttl, "ttl"))
        self._working_ttl = _ttl_ms(working_ttl, "working_ttl")
        self._snapshot_ttl = _ttl_ms(snapshot_ttl, "snapshot_ttl")
        self._cluster = cluster or isinstance(client, AsyncRedisClusterClient)
        self._owns = _owns_client
        self._closed = False
        self._schema_ok = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "memorybank:",
        ttl: float | None = None,
        timeout: float = 5.0,
        working_ttl: float | None = None,
        snapshot_ttl: float | None = None,
        max_connections: int = 50,
        cluster: bool = False,
    ) -> AsyncRedisStore:
        """A store owning its client. ``redis://host:port/db?prefix=app:&ttl=3600``.

        The URL may carry ``prefix``, ``ttl``, ``working_ttl``, ``snapshot_ttl``,
        ``timeout`` and ``max_connections``; a keyword argument left at its
        default takes the URL's value. ``timeout`` (seconds) bounds connecting,
        every command and the wait for a free pooled connection.
        ``redis+cluster://host:port`` (or ``cluster=True``) connects to a Redis
        Cluster through that node; ``max_connections`` is then per node.
        """
        clean, opts = _split_url(url)
        try:
            if prefix == "memorybank:" and "prefix" in opts:
                prefix = opts["prefix"]
            if ttl is None and "ttl" in opts:
                ttl = float(opts["ttl"])
            if working_ttl is None and "working_ttl" in opts:
                working_ttl = float(opts["working_ttl"])
            if snapshot_ttl is None and "snapshot_ttl" in opts:
                snapshot_ttl = float(opts["snapshot_ttl"])
            if timeout == 5.0 and "timeout" in opts:
                timeout = float(opts["timeout"])
            if max_connections == 50 and "max_connections" in opts:
                max_connections = int(opts["max_connections"])
        except ValueError as error:
            raise ConfigurationError(f"bad option in redis URL {url!r}: {error}") from error
        if timeout <= 0 or max_connections < 1:
            raise ConfigurationError("timeout must be > 0 and max_connections >= 1")
        scheme = clean.partition("://")[0].lower()
        cluster = cluster or scheme in CLUSTER_SCHEMES
        client: AsyncRedisClient
        try:
            with _translated(False):
                if cluster:
                    client = aconnect_redis_cluster(
                        clean, timeout=timeout, max_connections=max_connections
                    )
                else:
                    client = aconnect_redis(clean, timeout=timeout, max_connections=max_connections)
        except ValueError as error:
            raise ConfigurationError(f"bad redis URL {url!r}: {error}") from error
        return cls(
            client,
            prefix=prefix,
            ttl=ttl,
            working_ttl=working_ttl,
            snapshot_ttl=snapshot_ttl,
            cluster=cluster,
            _owns_client=True,
        )

    # -- plumbing ----------------------------------------------------------------

    def _op(self) -> AbstractContextManager[None]:
        return _translated(self._closed)

    async def _ready(self) -> None:
        if not self._schema_ok:
            await self._migrate()

    def _base(self, tenant: str, thread_id: str) -> str:
        return f"{self._prefix}{{{_esc(tenant)}:{_esc(thread_id)}}}:"

    def _idx(self, tenant: str) -> str:
        return f"{self._prefix}{{{_esc(tenant)}}}:"

    async def _eval(self, script: _Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return await self._client.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            await self._client.script_load(script.source)
            return await self._client.evalsha(script.sha, len(keys), *keys, *args)

    async def _thread_eval(self, script: _Script, tenant: str, thread_id: str, *args: Any) -> Any:
        await self._ready()
        base = self._base(tenant, thread_id)
        idx = "" if self._cluster else self._idx(tenant)
        return await self._eval(script, (base + "t",), (base, self._ttl, idx, *args))

    async def _migrate(self) -> None:
        key = self._prefix + "schema_version"
        current = int(await self._client.get(key) or 0)
        if current > len(MIGRATIONS):
            raise ConfigurationError(
                f"redis data under prefix {self._prefix!r} has layout version {current}; "
                f"this memorybank knows up to {len(MIGRATIONS)}: upgrade memorybank"
            )
        for version in range(current, len(MIGRATIONS)):
            if version == 1:
                await self._backfill_shared_index()
            if version == 2:
                await self._backfill_vector_logs()
            script = _Script(_MIGRATE.replace("{body}", MIGRATIONS[version]), prelude="")
            await self._eval(script, (key,), (version, version + 1))
        self._schema_ok = True

    async def _backfill_vector_logs(self) -> None:
        """Layout v2 -> v3: log every stored vector (sequence 0) for the vector cache."""
        prefix = _glob_escape(self._prefix)
        for pattern, marker in (("{*}:ev:*", "}:ev:"), ("{*}:rv:*", "}:rv:")):
            async for key in self._client.scan_iter(match=prefix + pattern, count=1000):
                name = _s(key)
                head, found, tail = name[len(self._prefix) :].partition(marker)
                if not found or not head.startswith("{") or ":" in head:
                    continue  # not a tenant key
                if marker == "}:ev:":
                    log = f"{self._prefix}{head}}}:vl:entry:{tail}"
                    pairs = cast("dict[bytes, bytes]", await self._client.hgetall(key))
                    members = [_log_member(_s(t), _s(e)) for e, t in pairs.items()]
                else:
                    log = f"{self._prefix}{head}}}:vl:{tail}"
                    members = [_s(r) for r in await self._client.hkeys(key)]
                for start in range(0, len(members), _CHUNK):
                    part = members[start : start + _CHUNK]
                    await self._client.zadd(log, dict.fromkeys(part, 0), nx=True)

    async def _backfill_shared_index(self) -> None:
        """Layout v1 -> v2: put every thread without a user into its tenant's ``u0`` index."""
        pattern = _glob_escape(self._prefix) + "{*}:threads"
        async for key in self._client.scan_iter(match=pattern, count=1000):
            name = _s(key)
            tag = name[len(self._prefix) + 1 : -len("}:threads")]
            if ":" in tag or "{" in tag or "}" in tag:
                continue  # not a tenant index (a thread's key ending the same way)
            members = cast("list[bytes]", await self._client.zrange(key, 0, -1))
            for start in range(0, len(members), _CHUNK):
                part = members[start : start + _CHUNK]
                async with self._client.pipeline(transaction=False) as pipe:
                    for tid in part:
                        pipe.hget(f"{self._prefix}{{{tag}:{_esc(_s(tid))}}}:t", "u")
                    owners = await pipe.execute()
                shared = [t for t, owner in zip(part, owners, strict=True) if owner is None]
                if shared:
                    await self._client.sadd(f"{self._prefix}{{{tag}}}:u0", *shared)

    async def _index(self, tenant: str, thread: Thread, *, created: bool = False) -> None:
        """Cluster mode: update the tenant indexes after a thread write."""
        if not self._cluster:
            return
        idx = self._idx(tenant)
        score = to_us(thread.updated_at)
        if thread.user_id is None and not created:
            await self._client.zadd(idx + "threads", {thread.id: score})
            return
        async with self._client.pipeline(transaction=False) as pipe:  # one slot: one round trip
            pipe.zadd(idx + "threads", {thread.id: score})
            if thread.user_id is not None:
                pipe.zadd(idx + "u:" + _esc(thread.user_id), {thread.id: score})
            else:
                pipe.sadd(idx + "u0", thread.id)
            await pipe.execute()

    async def _unindex(
        self, tenant: str, thread_id: str, user_id: str | None, vectors: Sequence[Any] = ()
    ) -> None:
        """Cluster mode: drop a deleted thread from the tenant indexes (and its vectors')."""
        if not self._cluster:
            return
        idx = self._idx(tenant)
        async with self._client.pipeline(transaction=False) as pipe:
            pipe.zrem(idx + "threads", thread_id)
            if user_id:
                pipe.zrem(idx + "u:" + _esc(user_id), thread_id)
            else:
                pipe.srem(idx + "u0", thread_id)
            self._unindex_vectors(pipe, idx, thread_id, vectors)
            await pipe.execute()

    def _unindex_vectors(self, pipe: Any, idx: str, thread_id: str, vectors: Sequence[Any]) -> None:
        """Cluster mode: queue dropping a thread's deleted entry vectors ({model, {ids}, ...})
        from the tenant's ``ev:`` index and ``vl:`` log, and bumping the generation."""
        for i in range(0, len(vectors), 2):
            ids = list(vectors[i + 1])
            model = _esc(_s(vectors[i]))
            for start in range(0, len(ids), _CHUNK):
                part = ids[start : start + _CHUNK]
                pipe.hdel(idx + "ev:" + model, *part)
                pipe.zrem(idx + "vl:entry:" + model, *(_log_member(thread_id, _s(v)) for v in part))
            pipe.hincrby(idx + "vs:entry:" + model, "g", 1)

    async def _sweep_vectors(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str] | None
    ) -> None:
        """Delete the vectors of deleted entries (``None``: of any entry) no branch holds.

        A second script after the one deleting the entries: if it fails, the vectors
        stay until the next sweep of the thread (``clear_entries``, ``truncate_after``
        and ``delete_branch`` sweep every vector of the thread), and searches resolve
        hits through the entries, so a leftover vector is never returned.
        """
        ids = [] if entry_ids is None else list(dict.fromkeys(entry_ids))
        if entry_ids is not None and not ids:
            return
        for start in range(0, max(len(ids), 1), _CHUNK):
            gone = await self._thread_eval(
                _S_SWEEP_VECTORS, tenant, thread_id, *ids[start : start + _CHUNK]
            )
            if self._cluster and gone:
                async with self._client.pipeline(transaction=False) as pipe:
                    self._unindex_vectors(pipe, self._idx(tenant), thread_id, gone)
                    await pipe.execute()

    async def _eval_many(
        self, script: _Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Run ``script`` once per ``(keys, args)`` in pipelines (no transaction)."""
        results: list[Any] = []
        for start in range(0, len(calls), _CHUNK):
            part = calls[start : start + _CHUNK]
            try:
                results += await self._pipe_eval(script, part)
            except redis.exceptions.NoScriptError:
                await self._client.script_load(script.source)
                results += await self._pipe_eval(script, part)
        return results

    async def _pipe_eval(
        self, script: _Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        async with self._client.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                # not ``pipe.evalsha``: redis-py's cluster pipeline refuses that method,
                # though each script here touches one slot (its keys') and routes like any command
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            results: list[Any] = await pipe.execute()
            return results

    async def _tenant_eval(self, script: _Script, tenant: str, *args: Any) -> Any:
        """A script over the tenant slot (records, their vectors, the ``ev:`` index)."""
        await self._ready()
        idx = self._idx(tenant)
        return await self._eval(script, (idx + "threads",), (idx, *args))

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        cached = self.__dict__.get("_cached_vectors")
        if cached is not None:
            cached.stop()  # the background ANN builders end with the store
        if self._owns:
            try:
                await self._client.aclose()
            except (redis.exceptions.RedisError, OSError):
                pass

    # -- threads -------------------------------------------------------------------

    async def create_thread(self, thread: Thread) -> Thread:
        fields: list[Any] = [
            "id",
            thread.id,
            "ten",
            thread.tenant_id,
            "m",
            dump(thread.metadata),
            "s",
            thread.status,
            "c",
            to_us(thread.created_at),
            "up",
            to_us(thread.updated_at),
            "cb",
            thread.current_branch,
            "b:" + thread.current_branch,
            dump([to_us(thread.created_at), None, None]),
        ]
        for name, value in (("u", thread.user_id), ("a", thread.agent_id), ("ti", thread.title)):
            if value is not None:
                fields += [name, value]
        with self._op():
            created = await self._thread_eval(
                _S_CREATE,
                thread.tenant_id,
                thread.id,
                thread.id,
                to_us(thread.updated_at),
                *fields,
            )
            if not created:
                raise Conflict(f"thread {thread.id!r} already exists")
            await self._index(thread.tenant_id, thread, created=True)
        return thread

    async def get_thread(self, tenant: str, thread_id: str) -> Thread | None:
        with self._op():
            await self._ready()
            row = await self._client.hmget(self._base(tenant, thread_id) + "t", _THREAD_FIELDS)
        return None if row[0] is None else _thread(row)

    async def list_threads(
        self,
        tenant: str,
        *,
        user_id: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        status: str | None = None,
        limit: int | None = None,
    ) -> list[Thread]:
        """Walks the tenant (or user) index newest first; drops members of expired threads."""
        idx = self._idx(tenant)
        index = idx + ("u:" + _esc(user_id) if isinstance(user_id, str) else "threads")
        found: list[Thread] = []
        if limit == 0:
            return found
        batch = 100 if limit is None else max(limit, 20)
        start = 0
        with self._op():
            await self._ready()
            while True:
                ids = cast(
                    "list[bytes]", await self._client.zrevrange(index, start, start + batch - 1)
                )
                if not ids:
                    break
                async with self._client.pipeline(transaction=False) as pipe:
                    for tid in ids:
                        pipe.hmget(self._base(tenant, _s(tid)) + "t", _THREAD_FIELDS)
                    rows = await pipe.execute()
                gone = [tid for tid, row in zip(ids, rows, strict=True) if row[0] is None]
                if gone:
                    await self._client.zrem(index, *gone)
                    if index != idx + "threads":
                        await self._client.zrem(idx + "threads", *gone)
                    await self._client.srem(idx + "u0", *gone)
                for row in rows:
                    if row[0] is None:
                        continue
                    t = _thread(row)
                    if (
                        (isinstance(user_id, Unset) or t.user_id == user_id)
                        and (isinstance(agent_id, Unset) or t.agent_id == agent_id)
                        and (status is None or t.status == status)
                    ):
                        found.append(t)
                        if limit is not None and len(found) >= limit:
                            return found
                if len(ids) < batch:
                    break
                start += batch - len(gone)
        return found

    async def update_thread(
        self,
        tenant: str,
        thread_id: str,
        *,
        updated_at: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        status: str | Unset = UNSET,
        current_branch: str | Unset = UNSET,
    ) -> Thread:
        drop: list[str] = []
        sets: list[Any] = []
        if not isinstance(title, Unset):
            if title is None:
                drop.append("ti")
            else:
                sets += ["ti", title]
        if not isinstance(metadata, Unset):
            sets += ["m", dump(metadata)]
        if not isinstance(status, Unset):
            sets += ["s", status]
        branch = "" if isinstance(current_branch, Unset) else current_branch
        if branch:
            sets += ["cb", branch]
        with self._op():
            out = await self._thread_eval(
                _S_UPDATE, tenant, thread_id, to_us(updated_at), branch, len(drop), *drop, *sets
            )
            status_ = _s(out[0])
            if status_ == "NOTFOUND":
                raise NotFound(f"thread {thread_id!r} not found")
            if status_ == "NOBRANCH":
                raise NotFound(f"branch {branch!r} not found")
            thread = _thread(out[1:])
            await self._index(tenant, thread)
        return thread

    async def delete_thread(self, tenant: str, thread_id: str) -> bool:
        with self._op():
            deleted, _, owner, vectors = await self._thread_eval(_S_DELETE, tenant, thread_id, "")
            if deleted:
                await self._unindex(tenant, thread_id, _s(owner), vectors)
        return bool(deleted)

    # -- entries -----------------------------------------------------------------------

    async def append_entries(
        self,
        tenant: str,
        thread_id: str,
        entries: Sequence[NewEntry],
        *,
        updated_at: datetime,
        branch: str | None = None,
        owner: str | Unset | None = UNSET,
    ) -> AppendResult:
        """One script: checks, idempotency, positions, write, ``updated_at``, TTL."""
        if isinstance(owner, Unset):
            mode, who = "0", ""
        elif owner is None:
            mode, who = "1", ""
        else:
            mode, who = "2", owner
        texts = [_entry_json(e) for e in entries]
        args: list[Any] = [branch or "", mode, who, to_us(updated_at)]
        for new, text in zip(entries, texts, strict=True):
            args += [new.idempotency_key or "", new.id, text, new.fingerprint or ""]
        with self._op():
            out = await self._thread_eval(_S_APPEND, tenant, thread_id, *args)
            status = _s(out[0])
            if status != "OK":
                if status == "NOTFOUND":
                    raise NotFound(f"thread {thread_id!r} not found")
                if status == "FORBIDDEN":
                    raise ThreadForbidden()
                if status == "CONFLICT":
                    raise key_reused(_s(out[1]))
                raise NotFound(f"branch {_s(out[1])!r} not found")
            name = _s(out[1])
            thread = _thread(_unpack(out[2]))
            stored = [
                _entry(out[4 + 2 * i] or f"[{int(out[3 + 2 * i])},{text[1:]}", thread_id, name)
                for i, text in enumerate(texts)
            ]
            await self._index(tenant, thread)
        return AppendResult(stored, thread)

    async def list_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before: datetime | None = None,
        after: datetime | None = None,
        newest_first: bool = False,
    ) -> tuple[Thread, list[Entry]]:
        """``ZREVRANGE`` by rank in one script (a filtered page scans newest first)."""
        with self._op():
            out = await self._thread_eval(
                _S_LIST,
                tenant,
                thread_id,
                branch or "",
                -1 if limit is None else limit,
                offset,
                "" if before is None else to_us(before),
                "" if after is None else to_us(after),
            )
        if _s(out[0]) != "OK":
            raise NotFound(f"thread {thread_id!r} not found")
        name = _s(out[1])
        page = [_entry(member, thread_id, name) for member in out[3:]]
        if not newest_first:
            page.reverse()
        return _thread(_unpack(out[2])), page

    async def get_entry(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> Entry | None:
        with self._op():
            out = await self._thread_eval(_S_GET_ENTRY, tenant, thread_id, branch or "", entry_id)
        if not out:
            return None
        return _entry(out[1], thread_id, _s(out[0]))

    async def entry_get_many(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> dict[str, Entry]:
        """One pipeline of the ``get_entry`` script, one call per id."""
        wanted = list(dict.fromkeys(entry_ids))
        if not wanted:
            return {}
        base = self._base(tenant, thread_id)
        idx = "" if self._cluster else self._idx(tenant)
        with self._op():
            await self._ready()
            outs = await self._eval_many(
                _S_GET_ENTRY,
                [((base + "t",), (base, self._ttl, idx, branch or "", eid)) for eid in wanted],
            )
        return {
            eid: _entry(out[1], thread_id, _s(out[0]))
            for eid, out in zip(wanted, outs, strict=True)
            if out
        }

    async def delete_entries(
        self, tenant: str, thread_id: str, entry_ids: Sequence[str], *, branch: str | None = None
    ) -> int:
        with self._op():
            n = int(
                await self._thread_eval(
                    _S_DELETE_ENTRIES, tenant, thread_id, branch or "", *entry_ids
                )
            )
        if n < 0:
            raise NotFound(f"thread {thread_id!r} not found")
        if n:
            with self._op():
                await self._sweep_vectors(tenant, thread_id, entry_ids)
        return n

    async def truncate_after(
        self, tenant: str, thread_id: str, entry_id: str, *, branch: str | None = None
    ) -> int:
        with self._op():
            n = int(await self._thread_eval(_S_TRUNCATE, tenant, thread_id, branch or "", entry_id))
        if n == -1:
            raise NotFound(f"thread {thread_id!r} not found")
        if n == -2:
            raise NotFound(f"entry {entry_id!r} not found on this branch")
        if n:
            with self._op():
                await self._sweep_vectors(tenant, thread_id, None)
        return n

    async def clear_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        with self._op():
            n = int(await self._thread_eval(_S_CLEAR, tenant, thread_id, branch or ""))
        if n < 0:
            raise NotFound(f"thread {thread_id!r} not found")
        if n:
            with self._op():
                await self._sweep_vectors(tenant, thread_id, None)
        return n

    async def count_entries(self, tenant: str, thread_id: str, *, branch: str | None = None) -> int:
        with self._op():
            n = int(await self._thread_eval(_S_COUNT, tenant, thread_id, branch or ""))
        if n < 0:
            raise NotFound(f"thread {thread_id!r} not found")
        return n

    # -- branches ------------------------------------------------------------------------

    async def create_branch(
        self,
        tenant: str,
        thread_id: str,
        name: str,
        *,
        from_branch: str,
        from_entry: str | None,
        created_at: datetime,
    ) -> Branch:
        """``COPY`` of the source branch's keys, trimmed after ``from_entry``, in one script."""
        record = dump([to_us(created_at), from_branch, from_entry])
        with self._op():
            status = _s(
                await self._thread_eval(
                    _S_CREATE_BRANCH,
                    tenant,
                    thread_id,
                    name,
                    from_branch,
                    from_entry or "",
                    record,
                )
            )
        if status == "NOTFOUND":
            raise NotFound(f"thread {thread_id!r} not found")
        if status == "NOSOURCE":
            raise NotFound(f"branch {from_branch!r} not found")
        if status == "CONFLICT":
            raise Conflict(f"branch {name!r} already exists")
        if status == "NOENTRY":
            raise NotFound(f"entry {from_entry!r} not found on branch {from_branch!r}")
        return Branch(
            name=name,
            thread_id=thread_id,
            created_at=created_at,
            from_branch=from_branch,
            from_entry=from_entry,
        )

    async def list_branches(self, tenant: str, thread_id: str) -> list[Branch]:
        with self._op():
            await self._ready()
            fields = await self._client.hgetall(self._base(tenant, thread_id) + "t")
        if not fields:
            raise NotFound(f"thread {thread_id!r} not found")
        found = []
        for field, value in fields.items():
            key = _s(field)
            if key.startswith("b:"):
                created, src, entry = json.loads(value)
                found.append(
                    Branch(
                        name=key[2:],
                        thread_id=thread_id,
                        created_at=from_us(created),
                        from_branch=src,
                        from_entry=entry,
                    )
                )
        return sorted(found, key=lambda b: (b.created_at, b.name))

    async def delete_branch(self, tenant: str, thread_id: str, name: str) -> bool:
        with self._op():
            n = int(await self._thread_eval(_S_DELETE_BRANCH, tenant, thread_id, name))
        if n == -1:
            raise NotFound(f"thread {thread_id!r} not found")
        if n == -2:
            raise Conflict(f"cannot delete the current branch {name!r}")
        if n == 1:
            with self._op():
                await self._sweep_vectors(tenant, thread_id, None)
        return n == 1

    # -- working memory ------------------------------------------------------------------

    def _run_key(self, tenant: str, run_id: str, kind: str) -> str:
        return f"{self._prefix}{{{_esc(tenant)}:{_esc(run_id)}}}:{kind}"

    async def working_set(self, tenant: str, run_id: str, key: str, value: str) -> None:
        name = self._run_key(tenant, run_id, "w")
        with self._op():
            await self._ready()
            if self._working_ttl:
                async with self._client.pipeline(transaction=True) as pipe:
                    pipe.hset(name, key, value)
                    pipe.pexpire(name, self._working_ttl)
                    await pipe.execute()
            else:
                await self._client.hset(name, key, value)

    async def working_get(self, tenant: str, run_id: str, key: str) -> str | None:
        with self._op():
            await self._ready()
            value = await self._client.hget(self._run_key(tenant, run_id, "w"), key)
        return _opt(value)

    async def working_delete(self, tenant: str, run_id: str, key: str) -> bool:
        with self._op():
            await self._ready()
            return bool(await self._client.hdel(self._run_key(tenant, run_id, "w"), key))

    async def working_items(self, tenant: str, run_id: str) -> dict[str, str]:
        with self._op():
            await self._ready()
            items = await self._client.hgetall(self._run_key(tenant, run_id, "w"))
        return {_s(k): _s(v) for k, v in items.items()}

    async def working_clear(self, tenant: str, run_id: str) -> None:
        with self._op():
            await self._ready()
            await self._client.delete(self._run_key(tenant, run_id, "w"))

    async def working_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Found by ``SCAN`` over ``P{tenant:*}:w`` (every node with ``cluster=True``), so
        the cost grows with the whole keyspace and the ids are sorted in memory."""
        return await self._run_ids(tenant, "w", after, limit)

    async def _run_ids(
        self, tenant: str, kind: str, after: str | None, limit: int | None
    ) -> list[str]:
        head = f"{self._prefix}{{{_esc(tenant)}:"
        tail = f"}}:{kind}"
        pattern = _glob_escape(head) + "*" + _glob_escape(tail)
        found: set[str] = set()
        with self._op():
            await self._ready()
            async for key in self._client.scan_iter(match=pattern, count=1000):
                name = _s(key)
                run = name[len(head) : -len(tail)]
                if ":" not in run and "{" not in run and "}" not in run:
                    found.add(_unesc(run))
        runs = sorted(r for r in found if after is None or r > after)
        return runs if limit is None else runs[:limit]

    # -- snapshots -------------------------------------------------------------------------

    async def snapshot_save(
        self,
        tenant: str,
        run_id: str,
        value: str,
        *,
        user_id: str | None,
        saved_at: datetime,
        owner_check: bool = True,
    ) -> None:
        owners = "" if user_id is None else self._idx(tenant) + "su:" + _esc(user_id)
        with self._op():
            await self._ready()
            if owners and self._cluster:  # another slot: first, by a command of its own
                await self._client.sadd(owners, run_id)
                owners = ""
            saved = await self._eval(
                _S_SNAPSHOT_SAVE,
                (self._run_key(tenant, run_id, "s"),),
                (
                    "1" if owner_check else "0",
                    _who(user_id),
                    value,
                    to_us(saved_at),
                    self._snapshot_ttl,
                    owners,
                    run_id,
                ),
            )
        if not saved:
            raise ThreadForbidden("snapshot access forbidden")

    async def snapshot_load(self, tenant: str, run_id: str) -> tuple[str | None, str] | None:
        with self._op():
            await self._ready()
            value, owner = await self._client.hmget(self._run_key(tenant, run_id, "s"), ["v", "o"])
        return None if value is None else (_opt(owner), _s(value))

    async def snapshot_runs(
        self, tenant: str, *, after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Found by ``SCAN`` over ``P{tenant:*}:s``, as :meth:`working_runs`."""
        return await self._run_ids(tenant, "s", after, limit)

    async def snapshot_delete(
        self, tenant: str, run_id: str, *, user_id: str | None = None, owner_check: bool = True
    ) -> bool:
        with self._op():
            await self._ready()
            deleted = int(
                await self._eval(
                    _S_SNAPSHOT_DELETE,
                    (self._run_key(tenant, run_id, "s"),),
                    ("1" if owner_check else "0", _who(user_id)),
                )
            )
        if deleted < 0:
            raise ThreadForbidden("snapshot access forbidden")
        return deleted > 0

    # -- summaries ---------------------------------------------------------------------------

    async def summary_add(self, tenant: str, summary: Summary) -> Summary:
        idx = self._idx(tenant)
        agent = _esc(summary.agent_id)
        record = dump([summary.id, summary.user_id, summary.content, to_us(summary.created_at)])
        with self._op():
            await self._ready()
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.rpush(idx + "sum:" + agent, record)
                if summary.user_id is not None:
                    pipe.sadd(idx + "sumu:" + _esc(summary.user_id), agent)
                await pipe.execute()
        return summary

    async def summary_list(
        self, tenant: str, *, agent_id: str, user_id: str | Unset | None
    ) -> list[Summary]:
        with self._op():
            await self._ready()
            items = await self._client.lrange(self._idx(tenant) + "sum:" + _esc(agent_id), 0, -1)
        found = []
        for item in items:
            sid, owner, content, created = json.loads(item)
            if isinstance(user_id, Unset) or owner is None or owner == user_id:
                found.append(
                    Summary(
                        id=sid,
                        agent_id=agent_id,
                        user_id=owner,
                        content=content,
                        created_at=from_us(created),
                    )
                )
        return found

    # -- erasure -------------------------------------------------------------------------------

    async def forget_user(self, tenant: str, user_id: str) -> int:
        """Threads (via the user index), snapshots (owner set), summaries (agent set)."""
        idx = self._idx(tenant)
        user = _esc(user_id)
        removed = 0
        with self._op():
            await self._ready()
            threads_key = idx + "u:" + user
            while True:
                ids = cast("list[bytes]", await self._client.zrange(threads_key, 0, 499))
                if not ids:
                    break
                for tid in ids:
                    deleted, entries, _, vectors = await self._thread_eval(
                        _S_DELETE, tenant, _s(tid), user_id
                    )
                    if deleted:
                        removed += 1 + int(entries)
                        await self._unindex(tenant, _s(tid), user_id, vectors)
                await self._client.zrem(threads_key, *ids)
                await self._client.zrem(idx + "threads", *ids)
            snaps_key = idx + "su:" + user
            for run in await self._client.smembers(snaps_key):
                key = self._run_key(tenant, _s(run), "s")
                removed += int(await self._eval(_S_FORGET_SNAPSHOT, (key,), (user_id,)))
            await self._client.delete(snaps_key)
            removed += int(
                await self._eval(
                    _S_FORGET_SUMMARIES, (idx + "sumu:" + user,), (idx + "sum:", user_id)
                )
            )
            removed += int(await self._tenant_eval(_S_RECORD_FORGET, tenant, user_id))
        return removed

    # -- compaction ------------------------------------------------------------------------

    async def compact_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        through_position: int,
        expected_ids: Sequence[str],
        summary: NewEntry | None,
        updated_at: datetime,
    ) -> bool:
        """One script: compare the ids up to ``through_position``, then splice the summary."""
        with self._op():
            out = await self._thread_eval(
                _S_COMPACT,
                tenant,
                thread_id,
                branch,
                through_position,
                to_us(updated_at),
                "" if summary is None else summary.id,
                (summary and summary.idempotency_key) or "",
                "" if summary is None else _entry_json(summary),
                *expected_ids,
            )
            status = _s(out[0])
            if status == "NOTFOUND":
                raise NotFound(f"thread {thread_id!r} not found")
            if status == "NOBRANCH":
                raise NotFound(f"branch {branch!r} not found")
            if status != "OK":
                return False
            await self._index(tenant, _thread(out[1:11]))
            await self._sweep_vectors(tenant, thread_id, expected_ids)
        return True

    async def update_entries(
        self,
        tenant: str,
        thread_id: str,
        *,
        branch: str,
        changes: Sequence[tuple[str, str | None, dict[str, Any], int]],
    ) -> int:
        """Read the members, rebuild them here, replace them all in one script if unchanged.

        The JSON members are rebuilt in Python (a Lua re-encode would not keep them
        byte-exact); the replacing script checks each member is still the one read
        (compare-and-set) and the read is retried when a writer got in between.
        """
        wanted = {c[0]: c for c in changes}
        ids = list(wanted)
        with self._op():
            for _ in range(32):
                read = await self._thread_eval(_S_GET_MEMBERS, tenant, thread_id, branch, *ids)
                if _s(read[0]) != "OK":
                    raise NotFound(f"thread {thread_id!r} not found")
                args: list[Any] = []
                for entry_id, member in zip(ids, read[1:], strict=True):
                    if member is None:
                        continue
                    _, content, state, tokens = wanted[entry_id]
                    data = json.loads(member)
                    data[4], data[9], data[10] = content, state, tokens
                    args += [entry_id, member, dump(data)]
                if not args:
                    return 0
                n = int(
                    await self._thread_eval(_S_REPLACE_MEMBERS, tenant, thread_id, branch, *args)
                )
                if n == -1:
                    raise NotFound(f"thread {thread_id!r} not found")
                if n >= 0:
                    return n
        raise StoreError("update_entries: entries kept changing under the update")

    # -- records ---------------------------------------------------------------------------

    async def record_put(
        self, tenant: str, records: Sequence[Record], *, guard: RecordGuard | None = None
    ) -> None:
        """One script over the tenant slot: the guard's check and the batch are atomic."""
        if not records and guard is None:
            return
        args = _guard_args(guard)
        for record in records:
            args += [record.kind, record.id, _who(record.user_id), _record_json(record)]
        with self._op():
            applied = int(await self._tenant_eval(_S_RECORD_PUT, tenant, *args))
        if applied < 0 and guard is not None:
            raise guard.failed()

    async def record_get(self, tenant: str, kind: str, record_id: str) -> Record | None:
        with self._op():
            await self._ready()
            text = await self._client.hget(self._idx(tenant) + "r:" + _esc(kind), record_id)
        return None if text is None else _record(kind, record_id, json.loads(text))

    async def record_delete(
        self,
        tenant: str,
        kind: str,
        record_ids: Sequence[str],
        *,
        guard: RecordGuard | None = None,
    ) -> int:
        ids = list(dict.fromkeys(record_ids))
        if not ids and guard is None:
            return 0
        with self._op():
            deleted = int(
                await self._tenant_eval(_S_RECORD_DELETE, tenant, *_guard_args(guard), kind, *ids)
            )
        if deleted < 0 and guard is not None:
            raise guard.failed()
        return deleted

    async def _records_in_scope(
        self,
        tenant: str,
        kinds: Sequence[str],
        *,
        user_id: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        model_id: str = "",
    ) -> list[tuple[str, str, list[Any], bytes | None]]:
        """``(kind, id, decoded JSON, vector)`` of the records an owner index can hold.

        Reads the user's (and the shared) owner set when a user or a visibility
        is given, every record of the kind otherwise; callers filter the rest.
        With ``model_id``, only records with a vector of that model (and it).
        """
        if isinstance(user_id, str | None):
            mode, owner = "only", _who(user_id)
        elif visible_to is not None and not isinstance(visible_to.user_id, Unset):
            mode, owner = "vis", _who(visible_to.user_id)
        else:
            mode, owner = "all", "-"
        out = await self._tenant_eval(_S_RECORD_SCOPE, tenant, mode, owner, model_id, *kinds)
        found: list[tuple[str, str, list[Any], bytes | None]] = []
        step = 3 if model_id else 2
        for i in range(0, len(out), 2):
            kind, rows = _s(out[i]), out[i + 1]
            for j in range(0, len(rows), step):
                blob = rows[j + 2] if model_id else None
                found.append((kind, _s(rows[j]), json.loads(rows[j + 1]), blob))
        return found

    async def record_list(
        self,
        tenant: str,
        kind: str,
        *,
        agent_id: str | Unset | None = UNSET,
        user_id: str | Unset | None = UNSET,
        key: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        limit: int | None = None,
    ) -> list[Record]:
        """Reads the kind's records in the owner scope, then filters and sorts here."""
        with self._op():
            rows = await self._records_in_scope(
                tenant, [kind], user_id=user_id, visible_to=visible_to
            )
        found = [
            _record(kind, rid, data)
            for _, rid, data, _ in rows
            if (isinstance(agent_id, Unset) or data[0] == agent_id)
            and (isinstance(user_id, Unset) or data[1] == user_id)
            and (isinstance(key, Unset) or data[2] == key)
            and visible(visible_to, data[0], data[1])
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found if limit is None else found[:limit]

    async def record_get_many(
        self, tenant: str, kind: str, record_ids: Sequence[str]
    ) -> dict[str, Record]:
        """``HMGET`` of the kind's hash, ``_CHUNK`` ids per command, in one pipeline."""
        ids = list(dict.fromkeys(record_ids))
        if not ids:
            return {}
        key = self._idx(tenant) + "r:" + _esc(kind)
        with self._op():
            await self._ready()
            async with self._client.pipeline(transaction=False) as pipe:
                for start in range(0, len(ids), _CHUNK):
                    pipe.hmget(key, ids[start : start + _CHUNK])
                replies = await pipe.execute()
        texts = [text for reply in replies for text in reply]
        return {
            rid: _record(kind, rid, json.loads(text))
            for rid, text in zip(ids, texts, strict=True)
            if text is not None
        }

    @staticmethod
    def _owner_scope(visible_to: Visibility | None) -> tuple[str, str]:
        """The owner sets a visibility reads: ``("vis", owner)`` or ``("all", "-")``."""
        if visible_to is not None and not isinstance(visible_to.user_id, Unset):
            return "vis", _who(visible_to.user_id)
        return "all", "-"

    async def record_list_keys(
        self,
        tenant: str,
        kind: str,
        keys: Sequence[str],
        *,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One script: the records of the owner scope whose key matches (no key index in
        this layout: the scope's records are read and matched inside Redis)."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        mode, owner = self._owner_scope(visible_to)
        with self._op():
            out = await self._tenant_eval(_S_RECORD_KEYS, tenant, mode, owner, kind, *wanted)
        found = [_record(kind, _s(out[i]), json.loads(out[i + 1])) for i in range(0, len(out), 2)]
        found = [r for r in found if visible(visible_to, r.agent_id, r.user_id)]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found

    async def record_page(
        self,
        tenant: str,
        kind: str,
        *,
        limit: int,
        after: tuple[datetime, str] | None = None,
        visible_to: Visibility | None = None,
    ) -> list[Record]:
        """One script picks the candidates (visible, from about the cursor, about the oldest
        ``limit``); they are filtered and ordered exactly here. Without a time index in
        this layout the script reads the scope's records on every page."""
        if limit <= 0:
            return []
        mode, owner = self._owner_scope(visible_to)
        agent = "*" if visible_to is None else _who(visible_to.agent_id)
        user = "*" if visible_to is None else _who(visible_to.user_id)
        cursor = "" if after is None else str(to_us(after[0]))
        with self._op():
            out = await self._tenant_eval(
                _S_RECORD_PAGE, tenant, mode, owner, kind, agent, user, cursor, limit
            )
        found = [_record(kind, _s(out[i]), json.loads(out[i + 1])) for i in range(0, len(out), 2)]
        found = [
            r
            for r in found
            if visible(visible_to, r.agent_id, r.user_id)
            and (after is None or (r.created_at, r.id) > after)
        ]
        found.sort(key=lambda r: (r.created_at, r.id))
        return found[:limit]

    # -- search ----------------------------------------------------------------------------

    async def _threads_in_scope(
        self, tenant: str, thread_id: str | None, visible_to: Visibility | None, model_id: str
    ) -> list[tuple[str, list[Any]]]:
        """``(thread id, script reply)`` of the visible threads (entry texts or vectors).

        Candidates come from the tenant indexes: the user's threads and the
        shared ones (``u0``) for a visibility, every thread otherwise; the script
        re-checks visibility on the thread itself. Expired threads are dropped
        from the indexes read.
        """
        idx = self._idx(tenant)
        if thread_id is not None:
            indexes: list[str] = []
            tids = [thread_id]
        else:
            if visible_to is None or isinstance(visible_to.user_id, Unset):
                indexes = [idx + "threads"]
            elif visible_to.user_id is None:
                indexes = [idx + "u0"]
            else:
                indexes = [idx + "u:" + _esc(visible_to.user_id), idx + "u0"]
            async with self._client.pipeline(transaction=False) as pipe:
                for name in indexes:
                    if name.endswith(":u0"):
                        pipe.smembers(name)
                    else:
                        pipe.zrange(name, 0, -1)
                lists = await pipe.execute()
            tids = list(dict.fromkeys(_s(t) for ids in lists for t in ids))
        check = "0" if visible_to is None else "1"
        agent = "-" if visible_to is None else _who(visible_to.agent_id)
        user = "-" if visible_to is None else _who(visible_to.user_id)
        calls = []
        for tid in tids:
            base = self._base(tenant, tid)
            calls.append(((base + "t",), (base, "0", "", check, agent, user, model_id)))
        replies = await self._eval_many(_S_SCOPE, calls)
        found: list[tuple[str, list[Any]]] = []
        gone: list[str] = []
        for tid, reply in zip(tids, replies, strict=True):
            status = _s(reply[0])
            if status == "OK":
                found.append((tid, reply))
            elif status == "GONE":
                gone.append(tid)
        if gone and indexes:
            async with self._client.pipeline(transaction=False) as pipe:
                for name in {*indexes, idx + "threads"} - {idx + "u0"}:
                    pipe.zrem(name, *gone)
                pipe.srem(idx + "u0", *gone)
                await pipe.execute()
        return found

    async def text_search(
        self,
        tenant: str,
        query: str,
        *,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """BM25 (``memorybank.retrieval.bm25``) over the scope's texts, read from Redis.

        Costs a read of every text in scope: see "Search" in the module docstring.
        """
        from memorybank.retrieval.bm25 import BM25Index

        if k <= 0:
            with self._op():
                return []
        hits: list[SearchHit] = []
        texts: list[str] = []
        record_kinds = [kind for kind in kinds if kind != "entry"]
        with self._op():
            await self._ready()
            if "entry" in kinds:
                for tid, reply in await self._threads_in_scope(tenant, thread_id, visible_to, ""):
                    for i in range(1, len(reply), 2):
                        name = _s(reply[i])
                        for member in reply[i + 1]:
                            data = json.loads(member)
                            if data[4]:
                                hits.append(SearchHit("entry", data[2], 0.0, tid, name))
                                texts.append(data[4])
            if record_kinds and thread_id is None:
                for kind, rid, data, _ in await self._records_in_scope(
                    tenant, record_kinds, visible_to=visible_to
                ):
                    if visible(visible_to, data[0], data[1]):
                        hits.append(SearchHit(kind, rid, 0.0))
                        texts.append(data[3])
        index = BM25Index()
        for number, text in enumerate(texts):
            index.add(str(number), text)
        ranked = sorted(
            (
                SearchHit(hit.kind, hit.id, score, hit.thread_id, hit.branch)
                for hit, score in ((hits[int(n)], s) for n, s in index.scores(query).items())
            ),
            key=lambda h: (-h.score, h.kind, h.id, h.branch or ""),
        )
        return ranked[:k]

    async def vector_put(self, tenant: str, items: Sequence[VectorItem]) -> None:
        """Entry vectors: one script per thread and model (skipped for a deleted thread);
        record vectors: one script over the tenant slot."""
        by_thread: dict[tuple[str, str], list[Any]] = {}
        records: list[Any] = []
        for item in items:
            blob = unit_vector_bytes(item.vector)
            if item.kind == "entry":
                if item.thread_id is not None:
                    by_thread.setdefault((item.thread_id, item.model_id), []).extend(
                        (item.id, blob)
                    )
            else:
                records += [item.kind, item.id, item.model_id, blob]
        idx = self._idx(tenant)
        with self._op():
            await self._ready()
            calls = []
            owners: list[tuple[str, str, list[Any]]] = []
            for (tid, model), pairs in by_thread.items():
                base = self._base(tenant, tid)
                for start in range(0, len(pairs), 2 * _CHUNK):
                    part = pairs[start : start + 2 * _CHUNK]
                    index = "" if self._cluster else idx
                    calls.append(((base + "t",), (base, self._ttl, index, model, tid, *part)))
                    owners.append((tid, model, part))
            stored = await self._eval_many(_S_PUT_VECTORS, calls)
            if self._cluster and calls:
                async with self._client.pipeline(transaction=False) as pipe:
                    for (tid, model, part), ok in zip(owners, stored, strict=True):
                        if ok:
                            pipe.hset(
                                idx + "ev:" + _esc(model),
                                mapping=dict.fromkeys(part[0::2], tid),
                            )
                    await pipe.execute()
                for (tid, model, part), ok in zip(owners, stored, strict=True):
                    if ok:
                        members = [_log_member(tid, _s(e)) for e in part[0::2]]
                        await self._tenant_eval(_S_VECTOR_LOG, tenant, model, *members)
            for start in range(0, len(records), 4 * _CHUNK):
                await self._tenant_eval(
                    _S_RECORD_VECTORS, tenant, *records[start : start + 4 * _CHUNK]
                )

    async def vector_search(
        self,
        tenant: str,
        vector: Sequence[float],
        *,
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None = None,
        visible_to: Visibility | None = None,
    ) -> list[SearchHit]:
        """Cosine top-k with numpy over the vectors kept in process (``_vector_cache``),
        kept current through the ``vs:``/``vl:`` stamps and logs; the hits' scope is
        confirmed in Redis."""
        from memorybank._async.stores._vector_cache import CachedVectors

        cache: CachedVectors | None = self.__dict__.get("_cached_vectors")
        if cache is None:
            cache = self.__dict__.setdefault("_cached_vectors", CachedVectors())
        with self._op():
            await self._ready()
            return await cache.search(
                self,
                tenant,
                vector,
                model_id=model_id,
                kinds=kinds,
                k=k,
                thread_id=thread_id,
                visible_to=visible_to,
            )

    async def _vc_live(self, tenant: str, model_id: str, kind: str) -> dict[str, int]:
        """``id -> seq`` of every logged vector of the key (the ``vl:`` log: no vector read)."""
        logged = cast(
            "list[tuple[bytes, float]]",
            await self._client.zrange(
                self._idx(tenant) + f"vl:{_esc(kind)}:{_esc(model_id)}", 0, -1, withscores=True
            ),
        )
        if kind == "entry":
            return {_s(m).partition("\0")[2]: int(score) for m, score in logged}
        return {_s(m): int(score) for m, score in logged}

    async def _vc_rows(
        self, tenant: str, model_id: str, kind: str, dim: int, after: int
    ) -> CachedRows:
        from memorybank.stores._vectors import CachedRows

        idx = self._idx(tenant)
        model = _esc(model_id)
        low = "-inf" if after < 0 else f"({after}"
        logged = cast(
            "list[tuple[bytes, float]]",
            await self._client.zrangebyscore(
                idx + f"vl:{_esc(kind)}:{model}", low, "+inf", withscores=True
            ),
        )
        found = CachedRows()
        if not logged:
            return found
        rows: list[tuple[int, str, str | None, Any, Any, Any, Any]] = []
        if kind == "entry":
            by_thread: dict[str, list[tuple[str, int]]] = {}
            for member, score in logged:
                tid, _, eid = _s(member).partition("\0")
                by_thread.setdefault(tid, []).append((eid, int(score)))
            tids = list(by_thread)
            async with self._client.pipeline(transaction=False) as pipe:
                for tid in tids:
                    base = self._base(tenant, tid)
                    pipe.hmget(base + "t", ["id", "a", "u"])
                    pipe.hmget(base + "v:" + model, [eid for eid, _ in by_thread[tid]])
                replies = await pipe.execute()
            for n, tid in enumerate(tids):
                alive, agent, user = replies[2 * n]
                for (eid, seq), blob in zip(by_thread[tid], replies[2 * n + 1], strict=True):
                    rows.append((seq, eid, tid, _opt(agent), _opt(user), alive, blob))
        else:
            rids = [_s(member) for member, _ in logged]
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.hmget(idx + "r:" + _esc(kind), rids)
                pipe.hmget(idx + f"rv:{_esc(kind)}:{model}", rids)
                records, blobs = await pipe.execute()
            for (rid, (_, score)), packed, blob in zip(
                zip(rids, logged, strict=True), records, blobs, strict=True
            ):
                data = json.loads(packed) if packed is not None else [None, None]
                rows.append((int(score), rid, None, data[0], data[1], packed, blob))
        rows.sort(key=lambda row: row[0])
        for seq, rid, owner, agent, user, alive, blob in rows:
            # a vector gone meanwhile (an expired thread) still moves the high-water mark
            ok = alive is not None and blob is not None
            found.add(seq, rid, owner, agent, user, ok, blob if ok else b"")
        return found

    async def _vc_check(
        self,
        tenant: str,
        model_id: str,
        kinds: Sequence[str],
        shortlist: Mapping[str, Sequence[tuple[str, str | None]]],
        dim: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> tuple[dict[str, tuple[int, int]], set[tuple[str, str]]]:
        idx = self._idx(tenant)
        model = _esc(model_id)
        reads: list[tuple[str, str | None, list[str]]] = []  # kind, thread, ids
        for kind, pairs in shortlist.items():
            if kind == "entry":
                by_thread: dict[str, list[str]] = {}
                for eid, tid in pairs:
                    if tid is not None and (thread_id is None or tid == thread_id):
                        by_thread.setdefault(tid, []).append(eid)
                reads += [("entry", tid, eids) for tid, eids in by_thread.items()]
            elif thread_id is None:
                reads.append((kind, None, [rid for rid, _ in pairs]))
        if not reads and not kinds:
            return {}, set()
        async with self._client.pipeline(transaction=False) as pipe:
            for kind in kinds:  # the counters first, in the same round trip
                pipe.hmget(idx + f"vs:{_esc(kind)}:{model}", ["v", "g"])
            for kind, tid, ids in reads:
                if tid is not None:
                    base = self._base(tenant, tid)
                    pipe.hmget(base + "t", ["id", "a", "u"])
                    pipe.hmget(base + "v:" + model, ids)
                else:
                    pipe.hmget(idx + "r:" + _esc(kind), ids)
                    pipe.hmget(idx + f"rv:{_esc(kind)}:{model}", ids)
            replies = await pipe.execute()
        stamps = {
            kind: (int(reply[0] or 0), int(reply[1] or 0))
            for kind, reply in zip(kinds, replies, strict=False)
        }
        replies = replies[len(kinds) :]
        confirmed: set[tuple[str, str]] = set()
        width = 4 * dim
        for n, (kind, tid, ids) in enumerate(reads):
            owners, blobs = replies[2 * n], replies[2 * n + 1]
            if tid is not None:
                alive, agent, user = owners
                if alive is None or not visible(visible_to, _opt(agent), _opt(user)):
                    continue
                confirmed |= {
                    ("entry", eid)
                    for eid, blob in zip(ids, blobs, strict=True)
                    if blob is not None and len(blob) == width
                }
                continue
            for rid, packed, blob in zip(ids, owners, blobs, strict=True):
                if packed is None or blob is None or len(blob) != width:
                    continue
                data = json.loads(packed)
                if visible(visible_to, data[0], data[1]):
                    confirmed.add((kind, rid))
        return stamps, confirmed

    async def _vc_exact(
        self,
        tenant: str,
        vector: Sequence[float],
        model_id: str,
        kinds: Sequence[str],
        k: int,
        thread_id: str | None,
        visible_to: Visibility | None,
    ) -> list[SearchHit]:
        """Exact cosine top-k with numpy over the scope's vectors, read from Redis."""
        from memorybank.stores._vectors import top_k

        hits: list[SearchHit] = []
        blobs: list[bytes] = []
        record_kinds = [kind for kind in kinds if kind != "entry"]
        with self._op():
            await self._ready()
            if "entry" in kinds and k > 0:
                for tid, reply in await self._threads_in_scope(
                    tenant, thread_id, visible_to, model_id
                ):
                    pairs = reply[1]
                    for i in range(0, len(pairs), 2):
                        hits.append(SearchHit("entry", _s(pairs[i]), 0.0, tid))
                        blobs.append(pairs[i + 1])
            if record_kinds and thread_id is None and k > 0:
                for kind, rid, data, blob in await self._records_in_scope(
                    tenant, record_kinds, visible_to=visible_to, model_id=model_id
                ):
                    if blob is not None and visible(visible_to, data[0], data[1]):
                        hits.append(SearchHit(kind, rid, 0.0))
                        blobs.append(blob)
        return [
            SearchHit(hits[i].kind, hits[i].id, score, hits[i].thread_id)
            for i, score in top_k(vector, blobs, k)
        ]

    async def vector_get(
        self, tenant: str, kind: str, ids: Sequence[str], *, model_id: str
    ) -> dict[str, list[float]]:
        """Records: one ``HMGET``. Entries: the ``ev:`` index locates each entry's thread."""
        wanted = list(dict.fromkeys(ids))
        found: dict[str, list[float]] = {}
        if not wanted:
            with self._op():
                return found
        idx = self._idx(tenant)
        model = _esc(model_id)
        with self._op():
            await self._ready()
            if kind != "entry":
                blobs = cast(
                    "list[bytes | None]",
                    await self._client.hmget(idx + f"rv:{_esc(kind)}:{model}", wanted),
                )
                for vid, blob in zip(wanted, blobs, strict=True):
                    if blob is not None:
                        found[vid] = vector_from_bytes(blob)
                return found
            threads = await self._client.hmget(idx + "ev:" + model, wanted)
            by_thread: dict[str, list[str]] = {}
            for vid, tid in zip(wanted, threads, strict=True):
                if tid is not None:
                    by_thread.setdefault(_s(tid), []).append(vid)
            if not by_thread:
                return found
            async with self._client.pipeline(transaction=False) as pipe:
                for tid, vids in by_thread.items():
                    base = self._base(tenant, tid)
                    pipe.exists(base + "t")
                    pipe.hmget(base + "v:" + model, vids)
                replies = await pipe.execute()
            stale: list[str] = []
            for n, vids in enumerate(by_thread.values()):
                if not replies[2 * n]:
                    stale += vids  # the thread expired: its vectors went with it
                    continue
                for vid, blob in zip(vids, replies[2 * n + 1], strict=True):
                    if blob is not None:
                        found[vid] = vector_from_bytes(blob)
            if stale:
                await self._client.hdel(idx + "ev:" + model, *stale)
        return found
