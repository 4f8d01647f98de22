"""memory.documents: CRUD, scoping of reads, embeddings and model ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorybank import Document, InvalidInput, Memory
from memorybank.errors import ConfigurationError

from .conftest import HashEmbedder, lasting_store


def test_add_get_delete(memory: Memory) -> None:
    doc = memory.documents.add("Tyres need 2.4 bar", metadata={"source": "manual", "page": 3})
    assert isinstance(doc, Document)
    assert doc.metadata == {"source": "manual", "page": 3}
    assert doc.agent_id is None and doc.user_id is None
    assert doc.created_at.tzinfo is not None
    got = memory.documents.get(doc.id)
    assert got == doc
    assert memory.documents.delete(doc.id) is True
    assert memory.documents.get(doc.id) is None
    assert memory.documents.delete(doc.id) is False
    assert memory.search("tyres", mode="keyword") == []
    assert memory.search("tyres", mode="semantic") == []


def test_returned_document_is_a_copy(memory: Memory) -> None:
    doc = memory.documents.add("alpha", metadata={"tags": ["a"]})
    doc.metadata["tags"].append("b")
    again = memory.documents.get(doc.id)
    assert again is not None and again.metadata == {"tags": ["a"]}


def test_get_and_delete_check_the_named_owner(memory: Memory) -> None:
    mine = memory.documents.add("alice's notes", user_id="alice", agent_id="bot")
    shared = memory.documents.add("everyone's notes")
    assert memory.documents.get(mine.id, user_id="bob") is None
    assert memory.documents.get(mine.id, agent_id="other") is None
    assert memory.documents.get(mine.id, user_id="alice", agent_id="bot") is not None
    assert memory.documents.get(shared.id, user_id="bob") is not None
    assert memory.documents.delete(mine.id, user_id="bob") is False
    assert memory.documents.get(mine.id) is not None
    assert memory.documents.delete(mine.id, user_id="alice") is True


def test_list_is_scoped_and_filtered(memory: Memory) -> None:
    a = memory.documents.add("a", user_id="alice", metadata={"lang": "en"})
    b = memory.documents.add("b", user_id="bob", metadata={"lang": "en"})
    s = memory.documents.add("s", metadata={"lang": "fr"})
    g = memory.documents.add("g", agent_id="other-agent")
    assert [d.id for d in memory.documents.list(user_id="alice", agent_id=None)] == [a.id, s.id]
    assert [d.id for d in memory.documents.list(user_id="bob", agent_id=None)] == [b.id, s.id]
    assert [d.id for d in memory.documents.list(user_id=None, agent_id=None)] == [s.id]
    assert [d.id for d in memory.documents.list(user_id="alice")] == [a.id, s.id, g.id]
    assert [d.id for d in memory.documents.list()] == [a.id, b.id, s.id, g.id]
    assert [d.id for d in memory.documents.list(agent_id="other-agent", user_id=None)] == [
        s.id,
        g.id,
    ]
    assert [d.id for d in memory.documents.list(user_id="alice", filters={"lang": "en"})] == [a.id]
    assert [d.id for d in memory.documents.list(user_id="alice", limit=1)] == [a.id]


def test_tenants_are_isolated(memory: Memory) -> None:
    doc = memory.documents.add("secret plans for the launch")
    other = memory.tenant("other")
    assert other.documents.get(doc.id) is None
    assert other.documents.list() == []
    assert other.documents.delete(doc.id) is False
    for mode in ("hybrid", "semantic", "keyword"):
        assert other.search("secret launch plans", mode=mode) == []
    assert memory.documents.get(doc.id) is not None


@pytest.mark.parametrize(
    "bad",
    [
        {"content": ""},
        {"content": "   "},
        {"content": 3},
        {"content": "x", "metadata": {"k": object()}},
        {"content": "x", "user_id": ""},
        {"content": "x", "embedding": [0.1] * 3},
        {"content": "x", "embedding": "abc"},
        {"content": "x", "embedding": [float("nan")] * 64},
        {"content": "x", "embedding": [0.0] * 64},
    ],
)
def test_bad_input_writes_nothing(memory: Memory, bad: dict[str, object]) -> None:
    with pytest.raises(InvalidInput):
        memory.documents.add(**bad)  # type: ignore[arg-type]
    assert memory.documents.list() == []


def test_embedded_on_add(memory: Memory, embedder: HashEmbedder) -> None:
    doc = memory.documents.add("my automobile is red")
    assert embedder.calls == [1]
    vec = memory.store.vector_get(
        memory.tenant_id, "document", [doc.id], model_id=embedder.model_id
    )
    assert doc.id in vec and len(vec[doc.id]) == embedder.dimensions
    hits = memory.search("car", mode="semantic")
    assert [h.id for h in hits] == [doc.id]
    assert hits[0].document == doc and hits[0].entry is None and hits[0].kind == "document"


def test_given_embedding_is_stored_not_computed(memory: Memory, embedder: HashEmbedder) -> None:
    vector = embedder.embed(["bicycle"])[0]
    embedder.calls.clear()
    doc = memory.documents.add("an unrelated text", embedding=vector)
    assert embedder.calls == []
    hits = memory.search("bicycle", mode="semantic")
    assert hits[0].id == doc.id
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_embedding_without_embedder_is_refused(tmp_path: Path) -> None:
    with Memory("memory://") as mem:
        with pytest.raises(InvalidInput, match="embedder"):
            mem.documents.add("x", embedding=[1.0, 0.0])
        mem.documents.add("plain text is fine")
        with pytest.raises(ConfigurationError):
            mem.search("plain", mode="semantic")
        assert [h.content for h in mem.search("plain")] == ["plain text is fine"]


def test_model_change_never_mixes_vectors(store_kind: str, tmp_path: Path) -> None:
    url = lasting_store(store_kind, tmp_path)
    old, new = HashEmbedder(model="v1"), HashEmbedder(model="v2")
    with Memory(url, embedder=old) as mem:
        doc = mem.documents.add("my automobile is red")
    with Memory(url, embedder=new) as mem:
        assert mem.search("car", mode="semantic") == []  # v1 vectors are never used for v2
        assert mem.embed_pending() == 1
        assert [h.id for h in mem.search("car", mode="semantic")] == [doc.id]
        assert mem.embed_pending() == 0
