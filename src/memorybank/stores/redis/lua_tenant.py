"""The Redis store's Lua scripts over a tenant's slot (records, vector logs, the feed).

They run after ``lua.TENANT_PRELUDE`` (KEYS[1] = any key of the tenant slot,
ARGV[1] = "P{tenant}:").
"""

from __future__ import annotations

from memorybank.events.types import RECORD_EVENTS
from memorybank.stores.redis.lua import TENANT_PRELUDE, Script


def _tenant(body: str) -> Script:
    """A script over the tenant slot (after ``TENANT_PRELUDE``)."""
    return Script(body, prelude=TENANT_PRELUDE)


# The change feed's events of record writes (``events.types.RECORD_EVENTS``): ``k`` = the
# kind, ``r`` = the record JSON (agent, user, key first), ``op`` = added/updated/deleted.
_RECORD_EVENT = (
    "\nlocal EVENTS = {"
    + ", ".join(f"['{kind} {op}'] = '{event}'" for (kind, op), event in RECORD_EVENTS.items())
    + """}
local function record_event(k, id, r, op)
  local kind = EVENTS[k .. ' ' .. op]
  if not kind then return end
  local rec = cjson.decode(r)
  if k == 'fact_version' then
    emit(kind, rec[2], rec[1], nil, rec[3], {version = id})
  elseif kind == 'graph.changed' then
    emit(kind, rec[2], rec[1], nil, id, {record = k, op = op})
  else
    emit(kind, rec[2], rec[1], nil, id, nil)
  end
end
"""
)

# ARGV[2..4] = guard (kind, id, revision; "" kind: none, "" revision: absent), ARGV[5] =
# the TTLs (ms) of the batch's kinds that have one (JSON {kind: ms}; the store's
# ``working_ttl`` / ``snapshot_ttl``), ARGV[6..] = (kind, id, owner "-" / "=<user>",
# key "-" / "=<key>", agent "-" / "=<agent>", record JSON) per record. -1: guard failed.
# A record of a kind with a TTL moves its group's deadline on (its key's records: a run's
# working memory; else itself: a snapshot); the groups already due are deleted first
# (``expire_due``).
S_RECORD_PUT = _tenant(
    _RECORD_EVENT
    + """
local ttls = cjson.decode(ARGV[5])
local now = next(ttls) and expire_due()
if not guard_ok(ARGV[2], ARGV[3], ARGV[4]) then return -1 end
local on = feed()
for i = 6, #ARGV, 6 do
  local kind, id, owner, key, json = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3], ARGV[i + 5]
  local old = redis.call('HGET', rkey(kind), id)
  if old then unindex_record(kind, id, old) end
  redis.call('HSET', rkey(kind), id, json)
  if on then record_event(kind, id, json, old and 'updated' or 'added') end
  if key ~= '-' then redis.call('SADD', keyset(kind, string.sub(key, 2)), id) end
  local agent = ARGV[i + 4]
  if agent ~= '-' then redis.call('SADD', agentset(kind, string.sub(agent, 2)), id) end
  if ttls[kind] then
    local g = kind .. '\\0' .. (key == '-' and 'i' .. id or 'k' .. string.sub(key, 2))
    redis.call('ZADD', idx .. 'rx', string.format('%d', now + ttls[kind]), g)
  end
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
)

# ARGV[2..4] = guard (as for _RECORD_PUT), ARGV[5] = kind, ARGV[6..] = distinct ids.
# Returns how many existed, -1 when the guard failed.
S_RECORD_DELETE = _tenant(
    _RECORD_EVENT
    + """
if not guard_ok(ARGV[2], ARGV[3], ARGV[4]) then return -1 end
local kind, n, on = ARGV[5], 0, feed()
for i = 6, #ARGV do
  local old = drop_record(kind, ARGV[i])
  if old then
    if on then record_event(kind, ARGV[i], old, 'deleted') end
    n = n + 1
  end
end
return n
"""
)

# ARGV[2] = model ("": no vectors), ARGV[3..] = (mode, owner, kind) per scope (``scope_ids``'
# mode and owner). Returns {kind, {id, record JSON[, vector], ...}, ...} per scope; records
# without a vector of the model are left out.
S_RECORD_SCOPE = _tenant("""
local model, out = ARGV[2], {}
for i = 3, #ARGV, 3 do
  local kind = ARGV[i + 2]
  local ids, records = scope_records(ARGV[i], ARGV[i + 1], kind)
  local rows, vectors = {}, {}
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
  out[#out + 1] = kind
  out[#out + 1] = rows
end
return out
""")

# ARGV[2] = "all" | "vis" (the shared owner set, and the user's when ARGV[3] = "=<user>"),
# ARGV[3] = owner ("-" none, "=<user>"), ARGV[4] = kind, ARGV[5] / ARGV[6] = agent / user
# ("*" any, "-" shared only, "=<id>" that one or shared), ARGV[7] = cursor time (µs,
# "" none), ARGV[8] = limit. Returns {id, record JSON, ...}: the visible records from
# about the cursor on that can be among the oldest ``limit`` after it. Lua numbers are
# doubles (times past 2255 lose microseconds), so every record within SLACK µs of the
# cursor's time is returned, the cut after the limit-th later one keeps a margin of
# 2 * SLACK, and the client filters and orders exactly.
S_RECORD_PAGE = _tenant("""
local SLACK = 4096
local lo, hi = nil, nil
if ARGV[7] ~= '' then
  lo = tonumber(ARGV[7]) - SLACK
  hi = tonumber(ARGV[7]) + SLACK
end
local limit = tonumber(ARGV[8])
local ids, records = scope_records(ARGV[2], ARGV[3], ARGV[4])
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
""")

# ARGV[2..] = (kind, id, model, vector) per item.
S_RECORD_VECTORS = _tenant("""
for i = 2, #ARGV, 4 do
  local kind, m = ARGV[i], ARGV[i + 2]
  local slot = esc(kind) .. ':' .. esc(m)
  redis.call('HSET', idx .. 'rv:' .. slot, ARGV[i + 1], ARGV[i + 3])
  redis.call('SADD', idx .. 'rvm:' .. esc(kind), m)
  local seq = redis.call('HINCRBY', idx .. 'vs:' .. slot, 'v', 1)
  redis.call('ZADD', idx .. 'vl:' .. slot, seq, ARGV[i + 1])
end
return 1
""")

# Cluster mode, after entry vectors were written in their thread's slot: index and log
# them (``index_vectors``). ARGV[2] = model, ARGV[3] = thread id, ARGV[4..] = entry ids.
S_VECTOR_LOG = _tenant("""
index_vectors(ARGV[3], ARGV[2], {unpack(ARGV, 4)})
return 1
""")

# Cluster mode, after a thread script (``lua._INDEXES``): ARGV[2] = thread id, ARGV[3] =
# user ("-" none, "=<user>"), ARGV[4] = "new" / "set" (index it at ARGV[5] = updated_at),
# "gone" (unindex it) or "" (neither), ARGV[6] = the thread's deleted entry vectors (JSON
# {model: [entry ids]}).
S_THREAD_INDEX = _tenant("""
local tid, op = ARGV[2], ARGV[4]
local user = ARGV[3] ~= '-' and string.sub(ARGV[3], 2)
if op == 'gone' then
  unindex(tid, user)
elseif op ~= '' then
  index({tid, false, user}, ARGV[5], op == 'new')
end
for m, ids in pairs(cjson.decode(ARGV[6])) do unindex_vectors(nil, tid, m, ids) end
return 1
""")

# ARGV[2] = user. Deletes the user's records (and their vectors), records no event for
# them, deletes the user's events (but earlier "user.forgotten" ones; while the feed is off
# too) and records one "user.forgotten"; returns how many records went. The last step of
# ``forget_user``: its thread deletes recorded nothing either.
S_RECORD_FORGET = _tenant("""
local user, n = ARGV[2], 0
local kinds = idx .. 'rk:' .. esc(user)
for _, kind in ipairs(redis.call('SMEMBERS', kinds)) do
  local set = owners(kind, user)
  for _, id in ipairs(redis.call('SMEMBERS', set)) do
    if drop_record(kind, id, user) then n = n + 1 end
  end
  redis.call('DEL', set)
end
redis.call('DEL', kinds)
local fe, start = idx .. 'fe', '-'
while true do
  local rows = redis.call('XRANGE', fe, start, '+', 'COUNT', 1000)
  local doomed = {}
  for _, row in ipairs(rows) do
    local f = fields(row[2])
    if f.u == user and f.k ~= 'user.forgotten' then doomed[#doomed + 1] = row[1] end
  end
  if #doomed > 0 then redis.call('XDEL', fe, unpack(doomed)) end
  if #rows < 1000 then break end
  start = '(' .. rows[#rows][1]
end
emit('user.forgotten', user)
return n
""")

# The change feed's reads (``_events``). ARGV[2] = after (a number), ARGV[3] = limit,
# ARGV[4] / ARGV[5] = user / agent ("*" any, "-" none, "=<id>": that user; that agent or
# none), ARGV[6..] = kinds (none: all). Returns {floor, id, fields, ...}: the tenant's
# floor (whether the cursor expired is ``check_floor``'s to say, in Python) and the events
# after ``after`` that match, at most ``limit``, oldest first (scanning on past those
# that do not match).
S_EVENTS_LIST = _tenant("""
local limit, user, agent = tonumber(ARGV[3]), ARGV[4], ARGV[5]
local kinds = nil
if #ARGV >= 6 then
  kinds = {}
  for i = 6, #ARGV do kinds[ARGV[i]] = true end
end
local fe, start, chunk = idx .. 'fe', '(0-' .. ARGV[2], math.max(limit, 256)
local out = {redis.call('HGET', idx .. 'fm', 'floor') or '0'}
while true do
  local rows = redis.call('XRANGE', fe, start, '+', 'COUNT', chunk)
  for _, row in ipairs(rows) do
    local f = fields(row[2])
    local u, a = f.u, f.a
    if (not kinds or kinds[f.k])
      and (user == '*' or (user == '-' and not u) or (u and '=' .. u == user))
      and admits(agent, a) then
      out[#out + 1] = row[1]
      out[#out + 1] = row[2]
      if (#out - 1) / 2 >= limit then return out end
    end
  end
  if #rows < chunk then return out end
  start = '(' .. rows[#rows][1]
end
""")

# ARGV[2] = cutoff (µs), ARGV[3] = limit: deletes the oldest events, at most ``limit``,
# up to the first not older than the cutoff, and raises the floor to the last one deleted.
# Returns how many went. (The stream keeps its last ID when emptied: numbers never repeat.)
S_EVENTS_PRUNE = _tenant("""
local fe, cutoff = idx .. 'fe', tonumber(ARGV[2])
local last = nil
for _, row in ipairs(redis.call('XRANGE', fe, '-', '+', 'COUNT', tonumber(ARGV[3]))) do
  local t = tonumber(fields(row[2]).t)
  if not t or t >= cutoff then break end
  last = tonumber(string.match(row[1], '%-(%d+)$'))
end
if not last then return 0 end
local n = redis.call('XTRIM', fe, 'MINID', string.format('0-%d', last + 1))
local floor = tonumber(redis.call('HGET', idx .. 'fm', 'floor') or '0')
if last > floor then redis.call('HSET', idx .. 'fm', 'floor', string.format('%d', last)) end
return n
""")

S_RECORD_EXPIRE = _tenant("expire_due()\nreturn 1\n")
