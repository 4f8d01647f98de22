"""``memory.events.list(content=True)``: each entry, fact and document event carries the
content of the item it names as it is when listed (an update shows, a deletion leaves
none); without it, events carry ids only. On SQLite and PostgreSQL, scoped to a user too.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memorybank.errors import InvalidInput
from memorybank.memory._sync.memory import DEFAULT_TENANT
from tests.reliability._harness import StoreSpec, provide, store_params


@pytest.fixture(params=store_params(("sqlite-normal", "postgres")))
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreSpec]:
    yield from provide(request.param, tmp_path)


def test_content_on_request_is_read_when_listed(spec: StoreSpec) -> None:
    with spec.memory() as memory:
        memory.events.enable()
        thread = memory.threads.create(user_id="ana")
        kept = memory.entries.add(thread.id, {"role": "user", "content": "first words"})
        changed = memory.entries.add(thread.id, {"role": "user", "content": "draft"})
        gone = memory.entries.add(thread.id, {"role": "user", "content": "soon deleted"})
        # an update (as compaction makes one)
        memory.store.entry_update(
            DEFAULT_TENANT, thread.id, branch="main", changes=[(changed.id, "final words", {}, 2)]
        )
        memory.entries.delete(thread.id, gone.id)
        fact = memory.facts.add(content="ana drinks tea", user_id="ana")
        doc = memory.documents.add(content="the handbook", user_id="ana")
        forgotten = memory.facts.add(content="ana's old address", user_id="ana")
        memory.facts.delete(forgotten.id)

        bare = memory.events.list(limit=1000)
        assert all(e.content is None for e in bare)
        full = memory.events.list(limit=1000, content=True)
        assert [e.id for e in full] == [e.id for e in bare]
        got = [(e.kind, e.item_id, e.content) for e in full]
        assert got == [
            ("thread.created", None, None),
            ("entry.added", kept.id, "first words"),
            ("entry.added", changed.id, "final words"),  # as it is now
            ("entry.added", gone.id, None),  # deleted since
            ("entry.updated", changed.id, "final words"),
            ("entry.deleted", gone.id, None),
            ("fact.added", fact.id, "ana drinks tea"),
            ("document.added", doc.id, "the handbook"),
            ("fact.added", forgotten.id, None),
            ("fact.deleted", forgotten.id, None),
        ]
        scoped = memory.scoped(user_id="ana").events.list(limit=1000, content=True)
        assert [(e.kind, e.item_id, e.content) for e in scoped] == got
        assert memory.scoped(user_id="bob").events.list(content=True) == []
        with pytest.raises(InvalidInput):
            memory.events.list(content="yes")  # type: ignore[arg-type]
