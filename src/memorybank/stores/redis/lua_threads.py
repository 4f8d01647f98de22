"""The Redis store's Lua scripts over one thread's slot (``P{tenant:thread}:``), each run
after ``lua._PRELUDE`` (whose comment gives KEYS[1] and ARGV[1..3])."""

from __future__ import annotations

from memorybank.stores.redis.lua import Script

# The head of the scripts on one branch: KEYS[1] = the thread hash, ARGV[4] = the branch
# ("": the thread's current one, ``t[2]``), read into ``b``; a gone thread returns {missing}.
_ON_BRANCH = """
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return {missing} end
local b = ARGV[4]
if b == '' then b = t[2] end"""


def _on_branch(body: str, missing: str = "-1") -> Script:
    """The script of ``body`` after ``_ON_BRANCH``, returning ``missing`` if the thread is gone."""
    return Script(_ON_BRANCH.format(missing=missing) + body)


# ARGV[4] = updated_at, ARGV[5..] = field, value pairs.
S_CREATE = Script("""
if redis.call('EXISTS', tkey) == 1 then return 0 end
redis.call('HSET', tkey, unpack(ARGV, 5))
local t = thread()
redis.call('DEL', zkey(t[10]), hkey(t[10]))
touch()
index(t, ARGV[4], true)
emit('thread.created', t[3], t[4], t[1])
return 1
""")

# ARGV[4] = branch ("" current), ARGV[5] = the required owner ("*" any, "-" none, "=<user>"),
# ARGV[6] = updated_at, ARGV[7..] = (idempotency key or "", entry id, entry JSON without
# its position, fingerprint or "", role) per entry (the role for the change feed's event:
# no decoding of the JSON). Returns status, branch, the thread's 10 fields,
# then per entry its position and "" (new) or the stored member (idempotent replay); or
# {'CONFLICT', key} (nothing written) when a stored key's member has another fingerprint
# (its 13th element; members without one match any payload), or {'TAKEN', id, branch}
# (nothing written) when an entry that is not a replay has an id the branch holds (the
# rule of ``memorybank.rules.entry_ids``; the batch's own ids were checked unique before).
# The thread's fields come back as one JSON array (one reply item instead of ten: cheaper
# on both sides).
S_APPEND = Script("""
local t = thread()
if not t[1] then return {'NOTFOUND'} end
if ARGV[5] ~= '*' and ARGV[5] ~= (t[3] and '=' .. t[3] or '-') then return {'FORBIDDEN'} end
local b = ARGV[4]
if b == '' then
  b = t[10]  -- the current branch always exists (it cannot be deleted)
elseif redis.call('HEXISTS', tkey, 'b:' .. b) == 0 then
  return {'NOBRANCH', b}
end
local z, h = zkey(b), hkey(b)
local on = feed()
local replay = {}  -- ARGV index -> {position, member}: found before anything is written
for i = 7, #ARGV, 5 do
  local key, fp = ARGV[i], ARGV[i + 3]
  local found = key ~= '' and redis.call('HGET', h, 'k:' .. key)
  if found then
    local p, m = member(z, h, found)
    if fp ~= '' then
      local old = cjson.decode(m)[13]
      if type(old) == 'string' and old ~= fp then return {'CONFLICT', key} end
    end
    replay[i] = {p, m}
  elseif redis.call('HEXISTS', h, 'i:' .. ARGV[i + 1]) == 1 then
    return {'TAKEN', ARGV[i + 1], b}
  end
end
local last = redis.call('ZREVRANGE', z, 0, 0, 'WITHSCORES')
local pos = 0
if last[2] then pos = tonumber(last[2]) end
redis.call('HSET', tkey, 'up', ARGV[6])
t[9] = ARGV[6]
local out = {'OK', b, cjson.encode(t)}
for i = 7, #ARGV, 5 do
  local key, id, json = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local hit = replay[i]
  if not hit and key ~= '' then  -- a key repeated in the batch: its first copy's entry
    local found = redis.call('HGET', h, 'k:' .. key)
    if found then hit = {member(z, h, found)} end
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
    if on then
      emit('entry.added', t[3], t[4], t[1], id, {branch = b, role = ARGV[i + 4]})
    end
    out[#out + 1] = pos
    out[#out + 1] = ''
  end
end
touch()
index(t, ARGV[6])
return out
""")

# ARGV[4] = updated_at, ARGV[5] = new current branch or "", ARGV[6] = n fields to delete,
# then the n field names, then field, value pairs to set.
S_UPDATE = Script("""
local t = thread()
if not t[1] then return {'NOTFOUND'} end
if ARGV[5] ~= '' and redis.call('HEXISTS', tkey, 'b:' .. ARGV[5]) == 0 then
  return {'NOBRANCH', ARGV[5]}
end
local n = tonumber(ARGV[6])
if n > 0 then redis.call('HDEL', tkey, unpack(ARGV, 7, 6 + n)) end
if #ARGV >= 7 + n then redis.call('HSET', tkey, unpack(ARGV, 7 + n)) end
redis.call('HSET', tkey, 'up', ARGV[4])
local was = t
t = thread()
touch()
index(t, ARGV[4])
for _, f in ipairs({3, 4, 5, 6, 7, 10}) do  -- owner, title, metadata, status, branch
  if was[f] ~= t[f] then
    emit('thread.updated', t[3], t[4], t[1])
    break
  end
end
return {'OK', cjson.encode(t)}
""")

# ARGV[4] = required owner or "" (any). Returns {deleted 0/1, entries removed, owner or "",
# vectors}: the entry vectors go with the thread; their entries in the tenant's "ev:" index
# are dropped here on a single node, or returned ({model, {ids}, ...}) for the caller.
# One "thread.deleted" event, none for its entries; none with an owner (``forget_user``,
# which records one "user.forgotten" at its end).
S_DELETE = Script("""
local t = owner()
if not t[1] then return {0, 0, '', {}} end
if ARGV[4] ~= '' and t[2] ~= ARGV[4] then return {0, 0, '', {}} end
local n, gone = 0, {}
for _, f in ipairs(redis.call('HKEYS', tkey)) do
  local kind, name = string.sub(f, 1, 2), string.sub(f, 3)
  if kind == 'b:' then
    n = n + drop_branch(name, true)
  elseif kind == 'v:' then
    unindex_vectors(gone, t[1], name, redis.call('HKEYS', vkey(name)))
    redis.call('DEL', vkey(name))
  end
end
redis.call('DEL', tkey)
if ARGV[4] == '' then emit('thread.deleted', t[2], t[3], t[1]) end
unindex(t[1], t[2])
return {1, n, t[2] or '', gone}
""")

# ARGV[4] = branch, ARGV[5] = limit (-1: all), ARGV[6] = offset,
# ARGV[7] = before ("" none), ARGV[8] = after ("" none). Returns status, branch, the
# thread (JSON array), then the entries newest first.
S_LIST = Script("""
local t = thread()
if not t[1] then return {'NOTFOUND'} end
local b = ARGV[4]
if b == '' then b = t[10] end
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
""")

# ARGV[4] = branch, ARGV[5..] = entry ids. Returns -1 (no thread) or {how many went, the
# vectors swept} (``sweep``, as the other deleting scripts).
S_DELETE_ENTRIES = _on_branch("""
local n, ids = 0, {}
for i = 5, #ARGV do
  ids[#ids + 1] = ARGV[i]
  local p = redis.call('HGET', hkey(b), 'i:' .. ARGV[i])
  if p then n = n + drop_range(b, p, p) end
end
touch()
return swept(n, ids)
""")

# ARGV[4] = branch, ARGV[5] = entry id. Returns -1 (no thread), -2 (no entry) or {how many
# went, swept}.
S_TRUNCATE = _on_branch("""
local p = redis.call('HGET', hkey(b), 'i:' .. ARGV[5])
if not p then return -2 end
local n = drop_range(b, '(' .. p, '+inf')
touch()
return swept(n)
""")

# ARGV[4] = branch. Returns -1 (no thread) or the count.
S_COUNT = _on_branch("""
return redis.call('ZCARD', zkey(b))
""")

# ARGV[4] = name, ARGV[5] = from branch, ARGV[6] = from entry or "", ARGV[7] = branch JSON.
# Returns a status (``codec.raise_status``).
S_CREATE_BRANCH = Script("""
if redis.call('EXISTS', tkey) == 0 then return {'NOTFOUND'} end
local name, src = ARGV[4], ARGV[5]
if redis.call('HEXISTS', tkey, 'b:' .. src) == 0 then return {'NOBRANCH', src} end
if redis.call('HEXISTS', tkey, 'b:' .. name) == 1 then return {'EXISTS', name} end
local p = false
if ARGV[6] ~= '' then
  p = redis.call('HGET', hkey(src), 'i:' .. ARGV[6])
  if not p then return {'NOENTRY', ARGV[6], src} end
end
local dz, dh = zkey(name), hkey(name)
redis.call('DEL', dz, dh)
redis.call('COPY', zkey(src), dz)
redis.call('COPY', hkey(src), dh)
if p then drop_range(name, '(' .. p, '+inf', true) end
redis.call('HSET', tkey, 'b:' .. name, ARGV[7])
if feed() then emit_entries('entry.added', name, redis.call('ZRANGE', dz, 0, -1)) end
touch()
return {'OK'}
""")

# ARGV[4] = name. Returns -1 (no thread), -2 (current branch), 0 (absent) or {1, swept}.
S_DELETE_BRANCH = Script("""
local t = redis.call('HMGET', tkey, 'id', 'cb')
if not t[1] then return -1 end
if t[2] == ARGV[4] then return -2 end
if redis.call('HDEL', tkey, 'b:' .. ARGV[4]) == 0 then return 0 end
drop_branch(ARGV[4])
touch()
return swept(1)
""")

# ARGV[4] = branch, ARGV[5] = through position, ARGV[6] = updated_at, ARGV[7] = summary id,
# ARGV[8] = summary idempotency key, ARGV[9] = summary JSON without its position ("" none),
# ARGV[10..] = the expected ids. Returns status (OK, NOTFOUND, NOBRANCH, STALE) [+ thread,
# the vectors swept].
S_COMPACT = Script("""
local t = thread()
if not t[1] then return {'NOTFOUND'} end
local b, through = ARGV[4], ARGV[5]
if redis.call('HEXISTS', tkey, 'b:' .. b) == 0 then return {'NOBRANCH', b} end
local z, h = zkey(b), hkey(b)
local doomed = redis.call('ZRANGEBYSCORE', z, '-inf', through)
if #doomed ~= #ARGV - 9 then return {'STALE'} end
local ids = {}
for i, m in ipairs(doomed) do
  if cjson.decode(m)[3] ~= ARGV[9 + i] then return {'STALE'} end
  ids[i] = ARGV[9 + i]
end
forget(h, doomed)
emit_entries('entry.deleted', b, doomed)
if ARGV[9] ~= '' and feed() then
  emit('entry.added', t[3], t[4], t[1], ARGV[7], {branch = b, role = cjson.decode(ARGV[9])[3]})
end
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
return {'OK', cjson.encode(t), sweep(ids)}
""")

# ARGV[4] = branch ("" current), ARGV[5..] = entry ids. Returns {'NOTFOUND'} or {'OK', branch,
# member or nil...}.
S_GET_MEMBERS = _on_branch(
    """
local z, h = zkey(b), hkey(b)
local out = {'OK', b}
for i = 5, #ARGV do
  local _, m = member(z, h, ARGV[i])
  out[#out + 1] = m or false
end
return out
""",
    missing="{'NOTFOUND'}",
)

# ARGV[4] = branch, ARGV[5..] = (entry id, member read before, new member) triples: all
# replaced (same position) if every member is unchanged. Returns -1 (no thread),
# -2 (changed since read: retry) or the count.
S_REPLACE_MEMBERS = _on_branch("""
local z, h = zkey(b), hkey(b)
local pos = {}
for i = 5, #ARGV, 3 do
  local p, m = member(z, h, ARGV[i])
  if not p or m ~= ARGV[i + 1] then return -2 end
  pos[#pos + 1] = p
end
for j, p in ipairs(pos) do
  local i = 5 + (j - 1) * 3
  redis.call('ZREM', z, ARGV[i + 1])
  redis.call('ZADD', z, p, ARGV[i + 2])
  emit_entries('entry.updated', b, {ARGV[i + 2]})
end
touch()
return #pos
""")

# Search scope of one thread. ARGV[4] = "1" to check visibility, ARGV[5] / ARGV[6] = the
# asking agent / user ("-" none, "*" any, "=<id>"), ARGV[7] = model ("": entry texts). Returns
# {'GONE'}, {'HIDDEN'}, {'OK', {id, vector, ...}} or {'OK', branch, {members}, ...}.
S_SCOPE = Script("""
local t = owner()
if not t[1] then return {'GONE'} end
if ARGV[4] == '1' and not (admits(ARGV[5], t[3]) and admits(ARGV[6], t[2])) then
  return {'HIDDEN'}
end
if ARGV[7] ~= '' then return {'OK', redis.call('HGETALL', vkey(ARGV[7]))} end
local out = {'OK'}
for _, b in ipairs(branches()) do
  out[#out + 1] = b
  out[#out + 1] = redis.call('ZRANGE', zkey(b), 0, -1)
end
return out
""")

# ARGV[4] = model, ARGV[5] = thread id, ARGV[6..] = (entry id, vector) pairs. Skipped
# (0) when the thread is gone; the vectors share the thread's deadline.
S_PUT_VECTORS = Script("""
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
  local ids = {}
  for i = 6, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
  index_vectors(ARGV[5], m, ids)
end
return 1
""")
