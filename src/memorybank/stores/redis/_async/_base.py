"""RedisBase: the client, the options and the calls every part of the Redis store shares.

Script calls (``EVALSHA``, reloaded on ``NOSCRIPT``; pipelined for many), the key
bases of a thread and a tenant, the layout migrations, the tenant indexes kept
apart with ``cluster=True``, the scope reads of records and search, and closing. The
verbs are in the sibling mixins.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager, asynccontextmanager
from typing import Any, Self, cast

import redis.exceptions

from memorybank.errors import ConfigurationError, NotFound
from memorybank.records import Summary
from memorybank.stores.contract._async.run_state_store import SNAPSHOT_KIND, WORKING_KIND
from memorybank.stores.contract.capabilities import Capability
from memorybank.stores.contract.types import UNSET, Unset, Visibility
from memorybank.stores.redis.codec import (
    as_str,
    chunks,
    esc,
    glob_escape,
    opt_str,
    split_url,
    translated,
    ttl_ms,
    unesc,
    who,
)
from memorybank.stores.redis.compat import (
    CLUSTER_SCHEMES,
    AsyncRedisClient,
    AsyncRedisClusterClient,
    aconnect_redis,
    aconnect_redis_cluster,
)
from memorybank.stores.redis.lua import MIGRATE, Script
from memorybank.stores.redis.lua_tenant import S_RECORD_SCOPE, S_THREAD_INDEX
from memorybank.stores.redis.lua_threads import S_SCOPE
from memorybank.stores.sql.common import dump, from_us
from memorybank.stores.vectors._async.source import CachedVectorStore

#: Layout migrations: ``MIGRATIONS[i]`` is the Lua body that takes the data from
#: version ``i`` to ``i + 1`` (run atomically with the version bump). Version 1
#: is the initial layout, which needs nothing created. Version 2 adds records,
#: vectors and the ``u0`` index of threads without a user; the store backfills
#: ``u0`` from the tenant indexes (SCAN, idempotent) before running its body.
#: Version 3 adds the vector cache's stamps and logs (``vs:``, ``vl:``), backfilled
#: by the client from the ``ev:`` and ``rv:`` hashes (SCAN, idempotent) first.
#: Version 4 adds the change feed (``_events``): nothing to create, but a process of an
#: older layout would write without recording events while the feed is on, so it must
#: refuse the data from then on. Version 5 keeps working memory, snapshots and summaries
#: as the records the contract derives them from (``run_state_store``), rewritten by the
#: client first (``_backfill_run_state``).
MIGRATIONS: list[str] = [
    "",
    "-- v2: records, vectors, u0 (backfilled by the client first)\n",
    "-- v3: vector stamps and logs (backfilled by the client first)\n",
    "-- v4: the change feed (written by the write scripts)\n",
    "-- v5: run state as records (rewritten by the client first)\n",
]


class RedisBase(CachedVectorStore):
    """The state and plumbing of ``AsyncRedisStore`` (``docs/redis.md``)."""

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
        self._ttl = str(ttl_ms(ttl, "ttl"))
        #: The record kinds that expire (``_records``: ``_fresh``; the record scripts).
        self._kind_ttls = {
            kind: ms
            for kind, ms in (
                (WORKING_KIND, ttl_ms(working_ttl, "working_ttl")),
                (SNAPSHOT_KIND, ttl_ms(snapshot_ttl, "snapshot_ttl")),
            )
            if ms
        }
        self._cluster = cluster or isinstance(client, AsyncRedisClusterClient)
        if self._without_feed():
            self.capabilities = type(self).capabilities - {Capability.EVENTS}
        self._owns = _owns_client
        self._closed = False
        self._schema_ok = False

    def _without_feed(self) -> str | None:
        """Why this store can keep no change feed (``None``: it can), read by its
        capabilities and by every ``events_*`` verb (``_events``)."""
        if self._cluster:
            return "cluster=True (a thread's write and its tenant's feed are in different slots)"
        if self._ttl != "0":
            return (
                "ttl= set (Redis expires a thread's keys itself, so no script could record"
                " the thread's deletion: a reader following the feed would keep it forever)"
            )
        return None

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
    ) -> Self:
        """A store owning its client. ``redis://host:port/db?prefix=app:&ttl=3600``.

        The URL may carry ``prefix``, ``ttl``, ``working_ttl``, ``snapshot_ttl``,
        ``timeout`` and ``max_connections``; a keyword argument left at its
        default takes the URL's value. ``timeout`` (seconds) bounds connecting,
        every command and the wait for a free pooled connection.
        ``redis+cluster://host:port`` (or ``cluster=True``) connects to a Redis
        Cluster through that node; ``max_connections`` is then per node.
        """
        clean, opts = split_url(url)

        def pick(name: str, given: Any, default: Any, kind: Callable[[str], Any] = float) -> Any:
            return kind(opts[name]) if given == default and name in opts else given

        try:
            prefix = pick("prefix", prefix, "memorybank:", str)
            ttl = pick("ttl", ttl, None)
            working_ttl = pick("working_ttl", working_ttl, None)
            snapshot_ttl = pick("snapshot_ttl", snapshot_ttl, None)
            timeout = pick("timeout", timeout, 5.0)
            max_connections = pick("max_connections", max_connections, 50, int)
        except ValueError as error:
            raise ConfigurationError(f"bad option in redis URL {url!r}: {error}") from error
        if timeout <= 0 or max_connections < 1:
            raise ConfigurationError("timeout must be > 0 and max_connections >= 1")
        scheme = clean.partition("://")[0].lower()
        cluster = cluster or scheme in CLUSTER_SCHEMES
        client: AsyncRedisClient
        try:
            with translated(False):
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
        return translated(self._closed)

    @asynccontextmanager
    async def _io(self) -> AsyncIterator[None]:
        """``_op`` (closed check, driver errors translated) after the layout check."""
        with self._op():
            await self._ready()
            yield

    async def _ready(self) -> None:
        if not self._schema_ok:
            await self._migrate()

    async def _scan_ids(self, head: str, tail: str, **options: Any) -> AsyncIterator[str]:
        """The (escaped) ``X`` of every key ``head + X + tail`` (``SCAN``; an ``X`` with
        ``:``, ``{`` or ``}`` is part of another kind of key and left out)."""
        pattern = glob_escape(head) + "*" + glob_escape(tail)
        async for key in self._client.scan_iter(match=pattern, count=1000, **options):
            name = as_str(key)
            found = name[len(head) : len(name) - len(tail)]
            if not {":", "{", "}"} & set(found):
                yield found

    def _base(self, tenant: str, thread_id: str) -> str:
        return f"{self._prefix}{{{esc(tenant)}:{esc(thread_id)}}}:"

    def _idx(self, tenant: str) -> str:
        return f"{self._prefix}{{{esc(tenant)}}}:"

    async def _eval(self, script: Script, keys: Sequence[str], args: Sequence[Any]) -> Any:
        try:
            return await self._client.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            await self._client.script_load(script.source)
            return await self._client.evalsha(script.sha, len(keys), *keys, *args)

    def _feed_switch(self) -> str:
        """The change feed's switch (a hash: ``keep`` seconds; absent: off)."""
        return self._prefix + "events"

    async def _feed_drawn(self, feed: str) -> int:
        """The last number a tenant's change feed (its stream ``feed``) drew (0: none)."""
        if not await self._client.exists(feed):
            return 0
        info = await self._client.xinfo_stream(feed)
        return int(as_str(info["last-generated-id"]).partition("-")[2])

    def _keys(self, key: str) -> tuple[str, ...]:
        """A script's keys: ``key`` of its slot, then (on a single node) the feed's switch,
        which the write scripts read (``memorybank.stores.redis.lua``: ``feed()``)."""
        return (key,) if self._cluster else (key, self._feed_switch())

    def _thread_call(self, tenant: str, thread_id: str, *args: Any) -> tuple[Any, Any]:
        """A thread script's keys and arguments (``lua._PRELUDE``'s head, then ``args``)."""
        base = self._base(tenant, thread_id)
        idx = "" if self._cluster else self._idx(tenant)
        return self._keys(base + "t"), (base, self._ttl, idx, *args)

    async def _thread_eval(self, script: Script, tenant: str, thread_id: str, *args: Any) -> Any:
        """A thread script's reply (in ``_op``, after the layout check, as ``_io``)."""
        with self._op():
            await self._ready()
            return await self._eval(script, *self._thread_call(tenant, thread_id, *args))

    async def _drop_gone(self, idx: str, indexes: Sequence[str], gone: Sequence[Any]) -> None:
        """Drop expired threads from the tenant indexes read (and ``threads``, ``u0``)."""
        async with self._client.pipeline(transaction=False) as pipe:
            for name in {*indexes, idx + "threads"} - {idx + "u0"}:
                pipe.zrem(name, *gone)
            pipe.srem(idx + "u0", *gone)
            await pipe.execute()

    async def _thread_count(self, script: Script, tenant: str, thread_id: str, *args: Any) -> int:
        """A thread script's count: its integer reply, or a deleting script's ``{count, the
        vectors it swept}`` (``lua``: ``swept``; unindexed after it with ``cluster=True``);
        ``NotFound`` when it reports no thread (-1)."""
        out = await self._thread_eval(script, tenant, thread_id, *args)
        n, gone = (out, ()) if isinstance(out, int) else out
        if n == -1:
            raise NotFound(f"thread {thread_id!r} not found")
        if gone:
            await self._index(tenant, thread_id, None, "", vectors=gone)
        return int(n)

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
            if version == 4:
                await self._backfill_run_state()
            script = Script(MIGRATE.replace("{body}", MIGRATIONS[version]), prelude="")
            await self._eval(script, (key,), (version, version + 1))
        self._schema_ok = True

    async def _backfill_vector_logs(self) -> None:
        """Layout v2 -> v3: log every stored vector (sequence 0) for the vector cache."""
        prefix = glob_escape(self._prefix)
        for pattern, marker in (("{*}:ev:*", "}:ev:"), ("{*}:rv:*", "}:rv:")):
            async for key in self._client.scan_iter(match=prefix + pattern, count=1000):
                name = as_str(key)
                head, found, tail = name[len(self._prefix) :].partition(marker)
                if not found or not head.startswith("{") or ":" in head:
                    continue  # not a tenant key
                if marker == "}:ev:":
                    log = f"{self._prefix}{head}}}:vl:entry:{tail}"
                    pairs = cast("dict[bytes, bytes]", await self._client.hgetall(key))
                    members = [as_str(t) + "\0" + as_str(e) for e, t in pairs.items()]
                else:
                    log = f"{self._prefix}{head}}}:vl:{tail}"
                    members = [as_str(r) for r in await self._client.hkeys(key)]
                for part in chunks(members):
                    await self._client.zadd(log, dict.fromkeys(part, 0), nx=True)

    async def _backfill_run_state(self) -> None:
        """Layout v4 -> v5: the records' key and agent sets (``rq:``, ``ra:``) from every record;
        then each run's working memory (``P{tenant:run}:w``, a hash), snapshot
        (``P{tenant:run}:s``: v, o, at) and each agent's summaries (``P{tenant}:sum:<agent>``,
        a list of JSON [id, user, content, at]) written as records by the contract's
        defaults, then the old keys (and the owner sets ``su:``, ``sumu:``) deleted. Safe to
        repeat: the records' ids come from the data. A remaining key TTL is not carried over."""
        head = glob_escape(self._prefix)
        async for hkey in self._client.scan_iter(match=head + "{*}:r:*", count=1000):
            tag, _, kind = as_str(hkey)[len(self._prefix) + 1 :].partition("}:r:")
            sets: dict[str, list[Any]] = {}
            async for rid, text in self._client.hscan_iter(hkey, count=1000):
                data = json.loads(text)
                for index, found in (("rq", data[2]), ("ra", data[0])):
                    if found is not None and ":" not in tag:
                        name = f"{self._prefix}{{{tag}}}:{index}:{kind}:{esc(found)}"
                        sets.setdefault(name, []).append(rid)
            async with self._client.pipeline(transaction=False) as pipe:
                for name, ids in sets.items():
                    for part in chunks(ids):
                        pipe.sadd(name, *part)
                await pipe.execute()
        view = copy.copy(self)
        view._schema_ok = True  # its writes go straight on (this store still migrates)
        for tail in ("}:w", "}:s", "}:sum:*", "}:su:*", "}:sumu:*"):
            async for key in self._client.scan_iter(match=head + "{*" + tail, count=1000):
                name = as_str(key)
                tag, _, rest = name[len(self._prefix) + 1 :].partition("}:")
                tenant, _, run = (unesc(p) for p in tag.partition(":"))
                if tail == "}:w":
                    pairs = cast("dict[bytes, bytes]", await self._client.hgetall(key))
                    for field, value in pairs.items():
                        await view.working_set(tenant, run, as_str(field), as_str(value))
                elif tail == "}:s":
                    text, owner, at = await self._client.hmget(key, ["v", "o", "at"])
                    if text is not None:
                        saved = from_us(int(at or 0))
                        await view.snapshot_save(
                            tenant, run, as_str(text), user_id=opt_str(owner), saved_at=saved,
                            owner_check=False,
                        )  # fmt: skip
                elif rest.startswith("sum:"):
                    agent = unesc(rest[4:])
                    for item in await self._client.lrange(key, 0, -1):
                        sid, user, content, at = json.loads(item)
                        summary = Summary(sid, agent, user, content, from_us(at))
                        await view.summary_add(tenant, summary)
                await self._client.delete(key)

    async def _backfill_shared_index(self) -> None:
        """Layout v1 -> v2: put every thread without a user into its tenant's ``u0`` index."""
        async for tag in self._scan_ids(self._prefix + "{", "}:threads"):
            key = f"{self._prefix}{{{tag}}}:threads"
            members = cast("list[bytes]", await self._client.zrange(key, 0, -1))
            for part in chunks(members):
                async with self._client.pipeline(transaction=False) as pipe:
                    for tid in part:
                        pipe.hget(f"{self._prefix}{{{tag}:{esc(as_str(tid))}}}:t", "u")
                    owners = await pipe.execute()
                shared = [t for t, owner in zip(part, owners, strict=True) if owner is None]
                if shared:
                    await self._client.sadd(f"{self._prefix}{{{tag}}}:u0", *shared)

    async def _index(
        self,
        tenant: str,
        thread_id: str,
        user_id: str | None,
        op: str,
        at: int | str = "",
        vectors: Sequence[Any] = (),
    ) -> None:
        """Cluster mode: the tenant indexes after a thread script (``lua_tenant``'s
        ``_THREAD_INDEX``: ``op`` "new" / "set" at ``at`` (µs), "gone" or ""; deleted entry
        vectors ``{model, {ids}, ...}`` as the thread script returned them)."""
        if not self._cluster:
            return
        pairs = zip(vectors[::2], vectors[1::2], strict=True)
        gone = dump({as_str(m): [as_str(v) for v in ids] for m, ids in pairs})
        await self._tenant_eval(S_THREAD_INDEX, tenant, thread_id, who(user_id), op, at, gone)

    async def _eval_many(
        self, script: Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        """Run ``script`` once per ``(keys, args)`` in pipelines (no transaction)."""
        results: list[Any] = []
        for part in chunks(calls):
            try:
                results += await self._pipe_eval(script, part)
            except redis.exceptions.NoScriptError:
                await self._client.script_load(script.source)
                results += await self._pipe_eval(script, part)
        return results

    async def _pipe_eval(
        self, script: Script, calls: Sequence[tuple[Sequence[str], Sequence[Any]]]
    ) -> list[Any]:
        async with self._client.pipeline(transaction=False) as pipe:
            for keys, args in calls:
                # not ``pipe.evalsha``: redis-py's cluster pipeline refuses that method,
                # though each script here touches one slot (its keys') and routes like any command
                pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            results: list[Any] = await pipe.execute()
            return results

    async def _tenant_eval(self, script: Script, tenant: str, *args: Any) -> Any:
        """A script over the tenant slot (records, their vectors, the ``ev:`` index), as
        ``_thread_eval``."""
        idx = self._idx(tenant)
        with self._op():
            await self._ready()
            return await self._eval(script, self._keys(idx + "threads"), (idx, *args))

    # -- scope reads (records and search: "Search" in ``docs/redis.md``) ------------------

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
                indexes = [idx + "u:" + esc(visible_to.user_id), idx + "u0"]
            async with self._client.pipeline(transaction=False) as pipe:
                for name in indexes:
                    if name.endswith(":u0"):
                        pipe.smembers(name)
                    else:
                        pipe.zrange(name, 0, -1)
                lists = await pipe.execute()
            tids = list(dict.fromkeys(as_str(t) for ids in lists for t in ids))
        check = "0" if visible_to is None else "1"
        agent = "-" if visible_to is None else who(visible_to.agent_id)
        user = "-" if visible_to is None else who(visible_to.user_id)
        calls = [self._thread_call(tenant, tid, check, agent, user, model_id) for tid in tids]
        replies = await self._eval_many(S_SCOPE, calls)
        found: list[tuple[str, list[Any]]] = []
        gone: list[str] = []
        for tid, reply in zip(tids, replies, strict=True):
            status = as_str(reply[0])
            if status == "OK":
                found.append((tid, reply))
            elif status == "GONE":
                gone.append(tid)
        if gone and indexes:
            await self._drop_gone(idx, indexes, gone)
        return found

    async def _records_in_scope(
        self,
        tenant: str,
        kinds: Sequence[str],
        *,
        user_id: str | Unset | None = UNSET,
        visible_to: Visibility | None = None,
        model_id: str = "",
        key: str | Unset | None = UNSET,
        agent_id: str | Unset | None = UNSET,
        keys: Sequence[str] = (),
    ) -> list[tuple[str, str, list[Any], bytes | None]]:
        """``(kind, id, decoded JSON, vector)`` of the records an owner index can hold.

        Reads the sets of ``keys`` when given, else the key's set when a ``key`` is
        given, else the user's owner set for a ``user_id``, else the agent's set for an
        ``agent_id``, else the user's and the shared owner sets for a visibility, else
        every record of the kind; callers filter the rest.
        With ``model_id``, only records with a vector of that model (and it).
        """
        if keys:
            scopes = [("key", who(k)) for k in keys]
        elif isinstance(key, str):  # the key's set: smaller than an owner's
            scopes = [("key", who(key))]
        elif isinstance(user_id, str | None):
            scopes = [("only", who(user_id))]
        elif isinstance(agent_id, str):
            scopes = [("agent", who(agent_id))]
        else:
            scopes = [self._owner_scope(visible_to)]
        args = [x for kind in kinds for mode, owner in scopes for x in (mode, owner, kind)]
        out = await self._tenant_eval(S_RECORD_SCOPE, tenant, model_id, *args)
        found: list[tuple[str, str, list[Any], bytes | None]] = []
        step = 3 if model_id else 2
        for i in range(0, len(out), 2):
            kind, rows = as_str(out[i]), out[i + 1]
            for j in range(0, len(rows), step):
                blob = rows[j + 2] if model_id else None
                found.append((kind, as_str(rows[j]), json.loads(rows[j + 1]), blob))
        return found

    @staticmethod
    def _owner_scope(visible_to: Visibility | None) -> tuple[str, str]:
        """The owner sets a visibility reads: ``("vis", owner)`` or ``("all", "-")``."""
        if visible_to is not None and not isinstance(visible_to.user_id, Unset):
            return "vis", who(visible_to.user_id)
        return "all", "-"

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._close_vector_cache()  # the background loads and ANN builders end with it
        if self._owns:
            try:
                await self._client.aclose()
            except (redis.exceptions.RedisError, OSError):
                pass
