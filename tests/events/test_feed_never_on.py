"""A SQL store whose change feed was never switched on (no feed tables at all), on
SQLite, PostgreSQL and MySQL: ``events_keep`` is ``None``, ``events_list`` reads nothing
after no cursor and raises ``CursorExpired`` after one; switched on, then off, the keep
time comes and goes and the events kept stay readable."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from memorybank.events.types import CursorExpired
from memorybank.memory._async.memory import AsyncMemory
from tests.reliability._harness import StoreSpec, Words, provide, store_params


@pytest.fixture
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


@pytest.mark.parametrize("spec", store_params(("sqlite-full", "postgres", "mysql")), indirect=True)
async def test_a_feed_never_on_reads_nothing_and_expires_cursors(spec: StoreSpec) -> None:
    store = spec.open_async()
    memory = AsyncMemory(store, tokenizer=Words())
    try:
        m = memory.tenant("never")
        thread = await m.threads.create()  # the schema made, the feed's tables not
        assert await store.events_keep() is None
        assert await m.events.list() == []
        with pytest.raises(CursorExpired):
            await m.events.list(after="3")
        await memory.events.enable(keep=timedelta(hours=2))
        assert await store.events_keep() == timedelta(hours=2)
        await m.entries.add(thread.id, {"role": "user", "content": "seen"})
        (added,) = await m.events.list(content=True)
        assert (added.kind, added.content) == ("entry.added", "seen")
        await memory.events.disable()
        assert await store.events_keep() is None
        assert [e.id for e in await m.events.list()] == [added.id]
    finally:
        await memory.close()
        await store.close()
