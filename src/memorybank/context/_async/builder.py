"""The context builder: the messages an agent sends on one turn, within a token budget.

Budgets, blocks and the history strategies follow the reference (Cogitator's
``ContextBuilder``), as docs/context.md sets out; unlike it, the thread is never loaded
whole: ``recent`` pages newest first, ``relevant``/``hybrid`` use the store's vector
search over the entries' stored embeddings.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memorybank.consolidation.profile import build_profile
from memorybank.context import values
from memorybank.context.values import Context, ContextError, ContextOptions
from memorybank.core._async.embed import embed_texts
from memorybank.core._async.facts import fact_rank
from memorybank.core._async.usage import weights
from memorybank.errors import ConfigurationError, InvalidInput, NotFound, ThreadForbidden
from memorybank.graph._async import AsyncGraph
from memorybank.graph._context import GraphBlock, as_options
from memorybank.graph.model import GraphContextOptions
from memorybank.records import Entry, Fact, Thread
from memorybank.rules import validate as v
from memorybank.runtime.concurrency import amaybe_await
from memorybank.runtime.log import logger
from memorybank.stores.contract._async.store import UNSET, Unset, Visibility
from memorybank.tokens import count_message_tokens

if TYPE_CHECKING:
    from memorybank.core._async.handle import AsyncMemoryHandle
    from memorybank.stores.contract._async.store import Record

__all__ = ["AsyncContextBuilder"]


FACTS_SHARE = 0.10
#: Share of the budget the ``User profile:`` block may take (``include_profile``).
PROFILE_SHARE = 0.10
SEMANTIC_SHARE = 0.10
GRAPH_SHARE = 0.15
HYBRID_SHARE = 0.30
HYBRID_RECENT = 10
HYBRID_MIN_CHARS = 20
HYBRID_MIN_SCORE = 0.6
SEMANTIC_LIMIT = 20
SEMANTIC_RESULTS = 5
SEMANTIC_MIN_SCORE = 0.7
DOCUMENT_KIND = "document"  # memory.documents' record kind
#: Smallest cost of an entry that can be selected by similarity (overhead + a word).
_MIN_ENTRY_TOKENS = 5
_FIRST_PAGE = 64
_MAX_PAGE = 1024
_MAX_CANDIDATES = 4096
#: Candidates the first similarity search asks for, per entry the budget holds.
_CANDIDATE_MARGIN = 2


class _Failed(Exception):
    """The input could not be embedded (recorded once, by the first part that needed it)."""


def _scored_text(entry: Entry) -> bool:
    """Only user/assistant entries with text are ever scored (tool/system never)."""
    return (
        entry.role in ("user", "assistant")
        and isinstance(entry.content, str)
        and entry.content.strip() != ""
    )


class _History:
    """The thread's current branch, read newest first in growing pages, each read once."""

    def __init__(self, memory: AsyncMemoryHandle, thread_id: str, user_id: str | None) -> None:
        self._store = memory._core.store
        self._tenant = memory.tenant_id
        self._thread_id = thread_id
        self._user_id = user_id
        self.pages: list[list[Entry]] = []
        self.exhausted = False
        self.thread: Thread | None = None
        self._offset = 0
        self.want = _FIRST_PAGE  # size of the next page read

    async def page(self, index: int) -> list[Entry] | None:
        """Page ``index`` (newest first), or ``None`` past the end."""
        while len(self.pages) <= index:
            if self.exhausted:
                return None
            size = max(16, min(self.want, _MAX_PAGE))
            try:
                thread, rows = await self._store.entry_list(
                    self._tenant,
                    self._thread_id,
                    limit=size,
                    offset=self._offset,
                    newest_first=True,
                )
            except NotFound:
                self.exhausted = True
                return None
            if thread.user_id != self._user_id:
                raise ThreadForbidden()
            self.thread = thread
            self._offset += len(rows)
            if len(rows) < size:
                self.exhausted = True
            self.pages.append(rows)
        return self.pages[index]

    async def total(self) -> int:
        if self.exhausted:
            return self._offset
        return await self._store.entry_count(self._tenant, self._thread_id)

    async def recent(self, budget: int, exclude: set[str]) -> list[Entry]:
        """The longest run of newest entries (skipping ``exclude``) whose counts fit."""
        taken: list[Entry] = []
        used = 0
        index = 0
        while True:
            if index >= len(self.pages):
                # size the next read by the tokens still to fill (entries seen so far as a guide)
                average = used / len(taken) if taken else 32.0
                self.want = math.ceil((budget - used) / max(average, 1.0) * 1.05) + 8
            rows = await self.page(index)
            if rows is None:
                return taken
            for entry in rows:
                if entry.id in exclude:
                    continue
                if used + entry.token_count > budget:
                    return taken
                used += entry.token_count
                taken.append(entry)
            index += 1


class AsyncContextBuilder(values.ContextBuilder):
    """Builds the messages of one turn within ``options``' token budget.

    Graph context comes from the memory's own ``memory.graph`` (see
    ``memorybank.graph._async.context``). ``graph`` (optional) replaces it: an
    ``AsyncGraph`` (another memory's), or any object with
    ``context_block(query, *, agent_id, user_id, max_tokens, **graph_options)``
    returning the block's text (or ``None``), sync or async, which receives
    ``options.graph_options`` as keyword arguments.
    """

    def __init__(
        self, options: ContextOptions, memory: AsyncMemoryHandle, *, graph: Any = None
    ) -> None:
        if not isinstance(options, ContextOptions):
            raise ConfigurationError("options must be a memorybank.ContextOptions")
        self.options = options
        self._memory = memory
        self._graph = graph

    async def build(
        self,
        thread_id: str,
        *,
        agent_id: str | Unset = UNSET,
        user_id: str | Unset | None = UNSET,
        system_prompt: str | None = None,
        current_input: str | None = None,
    ) -> Context:
        """The context for a turn of ``thread_id``, built for ``agent_id`` and ``user_id``.

        ``agent_id`` is required and ``user_id`` defaults to the memory's scope,
        on an unscoped memory to the thread's owner (as ``build_context``). The
        thread fails closed: a thread owned by another user (or by a user when
        ``user_id`` is ``None``) raises
        ``ThreadForbidden``. A missing thread has no history. Failures of the
        facts, semantic, graph or history parts are reported in
        ``Context.errors``, never raised.
        """
        agent, user = await self._memory._context_principal(thread_id, agent_id, user_id)
        return await self._build(
            thread_id,
            agent_id=agent,
            user_id=user,
            system_prompt=system_prompt,
            current_input=current_input,
            load_history=True,
            strict=False,
        )

    async def _build(
        self,
        thread_id: str,
        *,
        agent_id: str,
        user_id: str | None,
        system_prompt: str | None,
        current_input: str | None,
        load_history: bool,
        strict: bool,
    ) -> Context:
        thread_id = v.check_id(thread_id, "thread_id")
        agent_id = v.check_id(agent_id, "agent_id")
        user_id = v.check_optional_id(user_id, "user_id")
        for name, value in (("system_prompt", system_prompt), ("current_input", current_input)):
            if value is not None:
                v.check_text(value, name)
        opts = self.options
        core = self._memory._core
        available = opts.available
        context = Context(
            messages=[], token_count=0, truncated=False, included_entries=0, total_entries=0
        )
        blocks: list[str] = []
        system_tokens = 0

        if opts.include_system_prompt and system_prompt:
            blocks.append(system_prompt)
            system_tokens = self._system_tokens(blocks)
            if system_tokens > available:
                message = (
                    f"the system prompt takes {system_tokens} tokens, more than the {available}"
                    f" the context budget allows (max_tokens {opts.max_tokens} minus reserve"
                    f" {opts.reserve}); it is kept, but nothing else fits"
                )
                context.warnings.append(message)
                logger.warning("memorybank context: %s", message)

        def part_budget(share: float) -> int:
            return min(math.floor(available * share), max(0, available - system_tokens))

        query: list[list[float] | BaseException] = []

        async def query_vector() -> list[float] | None:
            embedder = core.embedder
            if embedder is None or not current_input:
                return None
            if not query:
                try:
                    query.append((await embed_texts(embedder, [current_input]))[0])
                except InvalidInput as error:  # the embedder's vector, not the caller's input
                    query.append(error)
                    raise _Failed("the embedder returned an unusable vector") from error
                except Exception as error:  # an embedder's own failure
                    query.append(error)
                    raise
            found = query[0]
            if isinstance(found, BaseException):
                raise _Failed("the current input could not be embedded") from found
            return found

        profiled: set[str] = set()  # the facts the profile block shows
        if opts.include_profile and user_id is not None:
            try:
                profile = build_profile(
                    user_id, await self._memory.facts.list(agent_id=agent_id, user_id=user_id)
                )
                lines = profile.lines()
                chosen, system_tokens, block = self._fit(
                    "User profile:", lines, part_budget(PROFILE_SHARE), blocks, system_tokens
                )
                if chosen:
                    blocks.append(block)
                    context.profile = [lines[i] for i in chosen]
                    names = list(profile.attributes)
                    profiled = {
                        item.fact_id for i in chosen for item in profile.attributes[names[i]]
                    }
            except Exception as error:
                context.errors.append(ContextError("profile", error))

        if opts.include_facts:
            try:
                facts = [f for f in await self._facts(agent_id, user_id) if f.id not in profiled]
                share = part_budget(FACTS_SHARE)
                chosen, fitted, block = self._fit(
                    "Known facts:", [f.content for f in facts], share, blocks, system_tokens
                )
                if len(chosen) < len(facts) and current_input and current_input.strip():
                    # more facts than fit: those relevant to the input first
                    try:
                        vector = await query_vector()
                    except Exception:  # the embedder's failure: keywords still rank them
                        vector = None
                    facts = await self._relevant_facts(facts, current_input, vector)
                    chosen, fitted, block = self._fit(
                        "Known facts:", [f.content for f in facts], share, blocks, system_tokens
                    )
                system_tokens = fitted
                if chosen:
                    blocks.append(block)
                    context.facts = [facts[i] for i in chosen]
            except Exception as error:
                context.errors.append(ContextError("facts", error))

        if opts.include_semantic_context and current_input:
            try:
                vector = await query_vector()
                texts = [] if vector is None else await self._semantic(vector, agent_id, user_id)
                chosen, system_tokens, block = self._fit(
                    "Relevant context:", texts, part_budget(SEMANTIC_SHARE), blocks, system_tokens
                )
                if chosen:
                    blocks.append(block)
                    context.semantic = [texts[i] for i in chosen]
            except Exception as error:
                context.errors.append(ContextError("semantic", error))

        if opts.include_graph_context and current_input:
            graph = self._graph if self._graph is not None else getattr(self._memory, "graph", None)
            own = self._own_options(graph)  # bad options are the caller's error: raised
            try:
                share = part_budget(GRAPH_SHARE)
                before, base = list(blocks), system_tokens

                def measure(text: str) -> int:  # the block's exact cost in the system message
                    return self._system_tokens([*before, text]) - base

                found = await self._graph_block(
                    graph, own, current_input, agent_id, user_id, share, measure
                )
                if found is not None and found.text:
                    cost = measure(found.text)
                    if cost <= share:
                        blocks.append(found.text)
                        system_tokens += cost
                        context.graph = found.text
                        context.graph_entities = found.entities
                        context.graph_relations = found.relations
            except Exception as error:
                context.errors.append(ContextError("graph", error))

        if blocks:
            context.messages.append({"role": "system", "content": "\n\n".join(blocks)})
        budget = max(0, available - system_tokens)

        entries: list[Entry] = []
        if load_history:
            history = _History(self._memory, thread_id, user_id)
            try:
                entries, recent_ids = await self._select(
                    history, budget, current_input, query_vector, context
                )
                context.total_entries = await history.total()
            except (ThreadForbidden, InvalidInput):
                raise
            except Exception as error:
                if strict:
                    raise
                context.errors.append(ContextError("history", error))
                entries, recent_ids = [], set()
            paired = self._pair(entries, recent_ids)
            kept_ids = {e.id for e in paired}
            dropped = [e for e in entries if e.role == "tool" and e.id not in kept_ids]
            if dropped:
                ids = ", ".join(repr(e.tool_call_id) for e in dropped[:3])
                more = f" and {len(dropped) - 3} more" if len(dropped) > 3 else ""
                message = (
                    f"left out {len(dropped)} tool result(s) whose call is not in the context"
                    f" (tool_call_id {ids}{more}): a provider refuses a tool result without"
                    " its call"
                )
                context.warnings.append(message)
            entries = paired
        context.entries = entries
        context.messages.extend(entry.to_message() for entry in entries)
        context.included_entries = len(entries)
        context.truncated = len(entries) < context.total_entries
        context.token_count = system_tokens + sum(e.token_count for e in entries)
        return context

    # -- blocks ------------------------------------------------------------------------

    def _system_tokens(self, blocks: Sequence[str]) -> int:
        if not blocks:
            return 0
        message = {"role": "system", "content": "\n\n".join(blocks)}
        return count_message_tokens(self._memory._core.tokenizer, message)

    def _fit(
        self, header: str, items: Sequence[str], budget: int, blocks: list[str], base: int
    ) -> tuple[list[int], int, str]:
        """Items fitted greedily into one block costing at most ``budget`` exact tokens.

        Returns the chosen indices, the system message's new exact token count
        and the block text.
        """
        if not items or budget <= 0:
            return [], base, ""
        tokenizer = self._memory._core.tokenizer
        used = self._system_tokens([*blocks, header]) - base
        chosen: list[int] = []
        for index, text in enumerate(items):
            cost = tokenizer.count("\n- " + text)
            if used + cost <= budget:
                chosen.append(index)
                used += cost
        while chosen:  # the per-item counts are close; the whole block is counted exactly
            block = header + "".join("\n- " + items[i] for i in chosen)
            exact = self._system_tokens([*blocks, block])
            if exact - base <= budget:
                return chosen, exact, block
            chosen.pop()
        return [], base, ""

    async def _facts(self, agent_id: str, user_id: str | None) -> list[Fact]:
        """Facts visible to the agent and user: highest confidence first, then newest
        (with ``decay``: by the decay weight first, ``memorybank.importance.HalfLife``)."""
        facts = sorted(
            await self._memory.facts.list(agent_id=agent_id, user_id=user_id), key=fact_rank
        )
        decay = self.options.decay
        if decay is None or not facts:
            return facts
        weight = await weights(
            self._memory._core,
            self._memory.tenant_id,
            [("fact", f.id, f.created_at) for f in facts],
            decay,
        )
        order = sorted(range(len(facts)), key=lambda i: -weight[i])  # stable: ties by rank
        return [facts[i] for i in order]

    async def _relevant_facts(
        self,
        facts: list[Fact],
        current_input: str,
        vector: list[float] | None,
    ) -> list[Fact]:
        """``facts`` ranked by relevance to the input (``memory.search``'s hybrid scorer),
        best first; the facts it finds no relevance in follow in their given order.
        Without a usable input vector the ranking is by keywords alone."""
        from memorybank.recall._async.fact_recall import rank_facts

        order = await rank_facts(
            self._memory._core, self._memory.tenant_id, current_input, facts, vector
        )
        ranked = set(order)
        return [facts[i] for i in order] + [f for i, f in enumerate(facts) if i not in ranked]

    async def _semantic(self, vector: list[float], agent_id: str, user_id: str | None) -> list[str]:
        """Texts of the first 5 visible documents scoring >= 0.7 among the top 20."""
        core = self._memory._core
        assert core.embedder is not None
        hits = await core.store.vector_search(
            self._memory.tenant_id,
            vector,
            model_id=core.embedder.model_id,
            kinds=[DOCUMENT_KIND],
            k=SEMANTIC_LIMIT,
            visible_to=Visibility(agent_id, user_id),
        )
        texts: list[str] = []
        good = list(itertools.takewhile(lambda h: h.score >= SEMANTIC_MIN_SCORE, hits))
        decay = self.options.decay
        if decay is not None and good:
            docs = await core.store.record_get_many(
                self._memory.tenant_id, DOCUMENT_KIND, [h.id for h in good]
            )
            written = [docs[h.id].created_at if h.id in docs else None for h in good]
            weight = await weights(
                core,
                self._memory.tenant_id,
                [("document", h.id, at) for h, at in zip(good, written, strict=True)],
                decay,
            )
            order = sorted(range(len(good)), key=lambda i: -good[i].score * weight[i])
            good = [good[i] for i in order]
        tenant = self._memory.tenant_id
        found: dict[str, Record] = {}
        read = 0  # the records of good[:read] have been read
        for at, hit in enumerate(good):
            if len(texts) >= SEMANTIC_RESULTS:
                break
            if hit.kind != DOCUMENT_KIND:
                continue
            if at >= read:
                # as many records as texts are still wanted (normally each gives one)
                read = at + SEMANTIC_RESULTS - len(texts)
                ids = [h.id for h in good[at:read] if h.kind == DOCUMENT_KIND]
                found.update(await core.store.record_get_many(tenant, DOCUMENT_KIND, ids))
            record = found.get(hit.id)
            if record is not None and record.agent_id in (None, agent_id):
                if record.user_id in (None, user_id):
                    texts.append(record.content)
        return texts

    def _own_options(self, graph: object) -> GraphContextOptions | None:
        """The checked options when ``graph`` is an ``AsyncGraph``, else ``None``."""
        if isinstance(graph, AsyncGraph):
            return as_options(self.options.graph_options)
        return None

    async def _graph_block(
        self,
        graph: Any,
        own: GraphContextOptions | None,
        query: str,
        agent_id: str,
        user_id: str | None,
        budget: int,
        measure: Callable[[str], int],
    ) -> GraphBlock | None:
        raw = self.options.graph_options
        if own is not None:  # the memory's own graph: the block with what it shows
            core = self._memory._core
            block: GraphBlock | None = await graph._context(
                query,
                agent_id=agent_id,
                user_id=user_id,
                max_tokens=budget,
                options=own,
                tokenizer=core.tokenizer,
                now=core.now(),
                measure=measure,
            )
            return block
        if graph is None or not hasattr(graph, "context_block"):
            raise ConfigurationError(
                "include_graph_context needs a graph with a context_block method"
            )
        # a graph object of the caller's: the hook, given the options as keyword arguments
        if isinstance(raw, GraphContextOptions):
            kwargs = {f.name: getattr(raw, f.name) for f in dataclasses.fields(raw)}
        else:
            kwargs = dict(raw)
        text = await amaybe_await(
            graph.context_block(
                query, agent_id=agent_id, user_id=user_id, max_tokens=budget, **kwargs
            )
        )
        if text is not None and not isinstance(text, str):
            raise TypeError("graph.context_block must return a string or None")
        return None if text is None else GraphBlock(text)

    # -- history -----------------------------------------------------------------------

    async def _select(
        self,
        history: _History,
        budget: int,
        current_input: str | None,
        query_vector: Any,
        context: Context,
    ) -> tuple[list[Entry], set[str]]:
        """The selected entries (chronological) and the ids of the recent run among them."""
        strategy = self.options.strategy
        embedder = self._memory._core.embedder
        if strategy != "recent" and embedder is not None and current_input:
            first = await history.page(0) or []
            if strategy == "relevant" or not (history.exhausted and len(first) <= HYBRID_RECENT):
                try:
                    vector = await query_vector()
                    assert vector is not None
                    if strategy == "relevant":
                        picked = await self._similar(
                            history, vector, budget, min_score=0.0, older_than=None, min_chars=0
                        )
                        return sorted(picked, key=_position), set()
                    boundary = first[HYBRID_RECENT - 1].position
                    semantic_budget = math.floor(budget * HYBRID_SHARE)
                    picked = await self._similar(
                        history,
                        vector,
                        semantic_budget,
                        min_score=HYBRID_MIN_SCORE,
                        older_than=boundary,
                        min_chars=HYBRID_MIN_CHARS,
                    )
                except (ThreadForbidden, InvalidInput):
                    raise
                except Exception as error:
                    context.errors.append(ContextError("relevance", error))
                else:
                    used = sum(_cost(e) for e in picked)
                    recent = await history.recent(budget - used, {e.id for e in picked})
                    return sorted([*picked, *recent], key=_position), {e.id for e in recent}
        recent = await history.recent(budget, set())
        recent.reverse()
        return recent, {e.id for e in recent}

    async def _similar(
        self,
        history: _History,
        vector: list[float],
        budget: int,
        *,
        min_score: float,
        older_than: int | None,
        min_chars: int,
    ) -> list[Entry]:
        """Entries most similar to ``vector`` first, fitted greedily (skipping) into ``budget``."""
        core = self._memory._core
        assert core.embedder is not None
        tenant = self._memory.tenant_id
        thread_id = history._thread_id
        picked: list[Entry] = []
        seen: set[str] = set()
        used = 0
        # A budget that needs more candidates starts with more: twice the entries of the
        # newest page's average cost it takes to fill (a search per step costs a scoring
        # and a scope check of every hit, so neither too few nor many more than needed).
        # The hits of a larger k begin with those of a smaller one: the picks are the same.
        first = history.pages[0] if history.pages else []
        average = max(sum(e.token_count for e in first) / len(first), 1.0) if first else 8.0
        wanted_k = _CANDIDATE_MARGIN * budget / average
        k = 64
        while k < _MAX_CANDIDATES and k < wanted_k:
            k *= 2
        while True:
            hits = await core.store.vector_search(
                tenant,
                vector,
                model_id=core.embedder.model_id,
                kinds=["entry"],
                k=k,
                thread_id=thread_id,
            )
            below = False
            wanted = [h.id for h in hits if h.id not in seen and h.score > min_score]
            entries = await core.store.entry_get_many(tenant, thread_id, wanted)
            for hit in hits:
                if hit.id in seen:
                    continue
                seen.add(hit.id)
                if hit.score <= min_score:
                    below = True
                    break
                entry = entries.get(hit.id)
                if entry is None or not _scored_text(entry):
                    continue
                if older_than is not None and entry.position >= older_than:
                    continue
                assert entry.content is not None
                if len(entry.content) <= min_chars:
                    continue
                cost = _cost(entry)
                if used + cost <= budget:
                    picked.append(entry)
                    used += cost
            if below or len(hits) < k or budget - used < _MIN_ENTRY_TOKENS:
                return picked
            if k >= _MAX_CANDIDATES:
                return picked
            k = min(k * 4, _MAX_CANDIDATES)

    def _pair(self, entries: list[Entry], recent_ids: set[str]) -> list[Entry]:
        """Keep the tool-call pairing invariant on a chronological selection.

        A tool result whose call is not earlier in the selection is dropped. An
        assistant entry picked by similarity (outside the recent run) whose
        calls' results are not all selected loses its tool calls (it is dropped
        if it has no text), so no provider sees a call without its result.
        """
        results = {e.tool_call_id for e in entries if e.role == "tool"}
        called: set[str] = set()
        kept: list[Entry] = []
        for entry in entries:
            if entry.role == "tool":
                if entry.tool_call_id in called:
                    kept.append(entry)
                continue
            if entry.tool_calls:
                complete = all(call.id in results for call in entry.tool_calls)
                if entry.id not in recent_ids and not complete:
                    if not entry.content:
                        continue
                    entry = _stripped(entry, self._memory._core.tokenizer)
                else:
                    called.update(call.id for call in entry.tool_calls)
            kept.append(entry)
        return kept


def _position(entry: Entry) -> int:
    return entry.position


def _cost(entry: Entry) -> int:
    # An entry picked by similarity is sent without its tool calls (see _pair); its
    # stored count is an upper bound of that cost, so budgets stay safe.
    return entry.token_count


def _stripped(entry: Entry, tokenizer: Any) -> Entry:
    clean = dataclasses.replace(entry, tool_calls=())
    clean.token_count = min(entry.token_count, count_message_tokens(tokenizer, clean.to_message()))
    return clean
