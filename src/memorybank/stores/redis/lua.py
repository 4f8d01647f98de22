"""Lua plumbing of the Redis store: the two preludes, ``Script`` and the migration frame.

I/O-free and shared by the async store and its generated sync twin. A script's
source is its body after the prelude helpers it calls (``_with_helpers``); the
scripts themselves are in ``lua_threads`` (a thread's slot) and
``lua_tenant`` (the tenant's slot, runs).
"""

from __future__ import annotations

import hashlib
import re

# -- ``esc`` (as ``codec.esc``; first: the helpers after it call it) and ``admits`` (``who``
# "*" any, "-" none, "=<id>": that one, admits an ``owner``; an absent one: always), in
# both preludes
_ESC = r"""
local function esc(s)
  return (string.gsub(s, '[%%:{}]', function(c) return string.format('%%%02X', string.byte(c)) end))
end
local function admits(who, owner)
  if who == '*' or not owner or owner == cjson.null then return true end
  return '=' .. owner == who
end
"""

# -- the change feed's helpers, in both preludes (``memorybank.stores.redis._async._events``).
# KEYS[2] = the store's feed switch ("P events", a hash; absent: off) on a single node;
# absent with ``cluster=True`` (a script touches one slot there: no feed). The switch is
# read at most once per script, by the first ``feed()``: a write costs one EXISTS while
# the feed is off. ``emit`` appends one event to the tenant's stream ``idx .. 'fe'``
# with the ID ``0-*`` (the stream's own counter, see ``_events``).

_FEED = r"""
local function feed()
  if feed_on == nil then
    feed_on = idx ~= '' and KEYS[2] ~= nil and redis.call('EXISTS', KEYS[2]) == 1
  end
  return feed_on
end
local function feed_field(f, name, v)  -- absent (nil, false, cjson.null): left out
  if type(v) == 'string' then
    f[#f + 1] = name
    f[#f + 1] = v
  end
end
local function emit(kind, u, a, th, it, d)
  if not feed() then return end
  if not feed_at then
    local now = redis.call('TIME')
    feed_at = now[1] .. string.rep('0', 6 - #now[2]) .. now[2]
  end
  local f = {'k', kind, 't', feed_at}
  feed_field(f, 'u', u)
  feed_field(f, 'a', a)
  feed_field(f, 'h', th)
  feed_field(f, 'i', it)
  if d then f[#f + 1] = 'd'; f[#f + 1] = cjson.encode(d) end
  redis.call('XADD', idx .. 'fe', '0-*', unpack(f))
end
"""


# -- a thread and its entry vectors in the tenant's indexes, in both preludes: kept by the
# thread's script on a single node; with ``cluster=True`` (``idx`` = "" there) by the
# tenant slot's ``_THREAD_INDEX`` after it. ``t`` = {thread id, _, user (false: none)}.

_INDEXES = r"""
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
local function unindex(tid, user)
  if idx ~= '' then
    redis.call('ZREM', idx .. 'threads', tid)
    if user then
      redis.call('ZREM', idx .. 'u:' .. esc(user), tid)
    else
      redis.call('SREM', idx .. 'u0', tid)
    end
  end
end
local function index_vectors(tid, m, ids)  -- entry vectors written: in the ev: index and vl: log
  local e, log = idx .. 'ev:' .. esc(m), idx .. 'vl:entry:' .. esc(m)
  local seq = redis.call('HINCRBY', idx .. 'vs:entry:' .. esc(m), 'v', 1)
  for _, id in ipairs(ids) do
    redis.call('HSET', e, id, tid)
    redis.call('ZADD', log, seq, tid .. '\0' .. id)
  end
end
local function unindex_vectors(out, tid, m, ids)
  -- deleted entry vectors: out of the tenant's ev:/vl: index on a single node (and the
  -- generation bumped), else returned ({model, {ids}, ...}) for the caller to drop
  if idx == '' then
    out[#out + 1] = m
    out[#out + 1] = ids
    return
  end
  for i = 1, #ids, 1000 do
    redis.call('HDEL', idx .. 'ev:' .. esc(m), unpack(ids, i, math.min(i + 999, #ids)))
  end
  local log = idx .. 'vl:entry:' .. esc(m)
  for _, id in ipairs(ids) do redis.call('ZREM', log, tid .. '\0' .. id) end
  redis.call('HINCRBY', idx .. 'vs:entry:' .. esc(m), 'g', 1)
end
"""


# -- the thread scripts' prelude ------------------------------------------------------
# Every thread script: KEYS[1] = the thread hash, ARGV[1] = the thread's key base
# ("P{tenant:thread}:"), ARGV[2] = TTL in ms ("0": none), ARGV[3] = the tenant index
# base ("P{tenant}:"; "" when the indexes are maintained outside the script).

_PRELUDE = (
    r"""
local base, ttl, idx = ARGV[1], ARGV[2], ARGV[3]
local tkey = KEYS[1]
local feed_on, feed_at, feed_owner = nil, nil, nil
"""
    + _ESC
    + r"""local function zkey(b) return base .. 'z:' .. esc(b) end
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
local function forget(h, members)
  for _, m in ipairs(members) do
    local e = cjson.decode(m)
    redis.call('HDEL', h, 'i:' .. e[3])
    if e[12] ~= cjson.null then redis.call('HDEL', h, 'k:' .. e[12]) end
  end
end
local function member(z, h, id)  -- an entry's position and member (nil: absent)
  local p = redis.call('HGET', h, 'i:' .. id)
  if p then return p, redis.call('ZRANGEBYSCORE', z, p, p)[1] end
end
"""
    + _INDEXES
    + _FEED
    + r"""
local function owner() return redis.call('HMGET', tkey, 'id', 'u', 'a') end
local function emit_entries(kind, b, members)  -- an event per entry member (feed on)
  if not feed() then return end
  feed_owner = feed_owner or owner()
  for _, m in ipairs(members) do
    local e = cjson.decode(m)
    emit(kind, feed_owner[2], feed_owner[3], feed_owner[1], e[3], {branch = b, role = e[4]})
  end
end
-- the entries of branch b at positions lo..hi / all of them (its two keys) go, with an
-- "entry.deleted" event each unless ``quiet``; both return how many went
local function drop_range(b, lo, hi, quiet)
  local z = zkey(b)
  local gone = redis.call('ZRANGEBYSCORE', z, lo, hi)
  forget(hkey(b), gone)
  if not quiet then emit_entries('entry.deleted', b, gone) end
  redis.call('ZREMRANGEBYSCORE', z, lo, hi)
  return #gone
end
local function drop_branch(b, quiet)
  local n = redis.call('ZCARD', zkey(b))
  if not quiet and feed() then
    emit_entries('entry.deleted', b, redis.call('ZRANGE', zkey(b), 0, -1))
  end
  redis.call('DEL', zkey(b), hkey(b))
  return n
end
local function sweep(ids)
  -- after entries were deleted: the vectors of ``ids`` (nil: of every entry) no branch
  -- holds any more (a fork copies entries with their ids: a vector goes with the last
  -- copy) are deleted and unindexed; returns ``unindex_vectors``' list (cluster=True)
  local tid, names, out = redis.call('HGET', tkey, 'id'), branches(), {}
  for _, f in ipairs(redis.call('HKEYS', tkey)) do
    if string.sub(f, 1, 2) == 'v:' then
      local m = string.sub(f, 3)
      local v = vkey(m)
      local gone = {}
      for _, id in ipairs(ids or redis.call('HKEYS', v)) do
        local held = false
        for _, b in ipairs(names) do
          if redis.call('HEXISTS', hkey(b), 'i:' .. id) == 1 then
            held = true
            break
          end
        end
        if not held and redis.call('HDEL', v, id) == 1 then gone[#gone + 1] = id end
      end
      if #gone > 0 then unindex_vectors(out, tid, m, gone) end
    end
  end
  return out
end
local function swept(n, ids)  -- a delete's reply: {n, what ``sweep`` returned}
  return {n, n > 0 and sweep(ids) or {}}
end
"""
)


# -- the tenant scripts' prelude: KEYS[1] = any key of the tenant slot, ARGV[1] = "P{tenant}:"

TENANT_PRELUDE = (
    r"""
local idx = ARGV[1]
local feed_on, feed_at = nil, nil
"""
    + _ESC
    + r"""local function rkey(k) return idx .. 'r:' .. esc(k) end
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
local function keyset(k, key) return idx .. 'rq:' .. esc(k) .. ':' .. esc(key) end
local function agentset(k, a) return idx .. 'ra:' .. esc(k) .. ':' .. esc(a) end
local function unindex_record(k, id, old)  -- out of its owner, key and agent sets
  local r = cjson.decode(old)
  redis.call('SREM', owners(k, r[2]), id)
  if r[3] ~= cjson.null then redis.call('SREM', keyset(k, r[3]), id) end
  if r[1] ~= cjson.null then redis.call('SREM', agentset(k, r[1]), id) end
end
local function drop_record(k, id, user)
  -- delete a record (only if ``user`` owns it, when given), out of its sets, with its
  -- vectors; returns its JSON (nil: not deleted)
  local old = redis.call('HGET', rkey(k), id)
  if old and (not user or cjson.decode(old)[2] == user) then
    redis.call('HDEL', rkey(k), id)
    unindex_record(k, id, old)
    drop_vectors(k, id)
    return old
  end
end
local function expire_due()
  -- delete the record groups whose deadline passed (``P{tenant}:rx``: "kind NUL k<key>"
  -- (the key's records) or "kind NUL i<id>" by deadline ms; see ``_RECORD_PUT``);
  -- returns now (ms)
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  for _, g in ipairs(redis.call('ZRANGEBYSCORE', idx .. 'rx', '-inf', string.format('%d', now))) do
    local cut = string.find(g, '\0', 1, true)
    local k, group = string.sub(g, 1, cut - 1), string.sub(g, cut + 2)
    local ids = {group}
    if string.sub(g, cut + 1, cut + 1) == 'k' then
      ids = redis.call('SMEMBERS', keyset(k, group))
    end
    for _, id in ipairs(ids) do drop_record(k, id) end
    redis.call('ZREM', idx .. 'rx', g)
  end
  return now
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
  -- mode "all": every record of k; "only": the owner's ("-": the shared ones);
  -- "vis": the owner's and the shared ones; "key" / "agent": the records whose key /
  -- agent is "=<id>"
  if mode == 'all' then return redis.call('HKEYS', rkey(k)) end
  if mode == 'key' then return redis.call('SMEMBERS', keyset(k, string.sub(owner, 2))) end
  if mode == 'agent' then return redis.call('SMEMBERS', agentset(k, string.sub(owner, 2))) end
  if owner == '-' then return redis.call('SMEMBERS', owners(k, nil)) end
  local ids = redis.call('SMEMBERS', owners(k, string.sub(owner, 2)))
  if mode == 'vis' then
    for _, id in ipairs(redis.call('SMEMBERS', owners(k, nil))) do ids[#ids + 1] = id end
  end
  return ids
end
local function scope_records(mode, owner, k)  -- ids of the scope, and their JSON (or false)
  local ids = scope_ids(mode, owner, k)
  return ids, chunks('HMGET', rkey(k), ids)
end
local function fields(f)  -- a feed event's fields (a stream entry's) as a table
  local out = {}
  for j = 1, #f, 2 do out[f[j]] = f[j + 1] end
  return out
end
"""
    + _INDEXES
    + _FEED
)


# KEYS[1] = the version key, ARGV[1] = from version, ARGV[2] = to version.
MIGRATE = """
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


class Script:
    """A Lua script run by ``EVALSHA`` (loaded on the first ``NOSCRIPT``)."""

    __slots__ = ("sha", "source")

    def __init__(self, body: str, *, prelude: str = _PRELUDE) -> None:
        self.source = _with_helpers(prelude, body) if prelude else body
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()
