"""Conversation structure for ranking: candidates, threads, sessions, neighbours, speakers.

A conversation memory is not a bag of independent documents.  Entries live in
threads, in order, and in *sessions* (bursts of messages separated by silence).
The answer to a question is often not the entry that matches it best but the
one right after it ("Have you been anywhere nice?" -> "Yes, Paris last May"),
and a topic discussed in one session spreads over several of its entries.  This
module turns a list of :class:`Candidate` records into index arrays that make
those relations cheap to use at query time (numpy, no Python loop per entry).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from numpy.typing import NDArray

from memorybank.recall.temporal import has_time_expression
from memorybank.stores.keyword.text import tokenize

__all__ = [
    "Candidate",
    "ConversationStructure",
    "asked_role",
    "mentioned_speakers",
    "name_tokens",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Candidate:
    """One memory entry as the ranking core sees it (adapt a store's Entry to this).

    * ``id``: unique id (Entry.id).
    * ``thread_id`` / ``position``: the thread and the order inside it; neighbours
      are the entries at ``position - 1`` / ``position + 1`` of the same thread
      among the candidates.
    * ``text``: what is searched (Entry.content).
    * ``name``: the speaker/author name (Entry.name), or None.
    * ``created_at``: time of the entry, timezone-aware or naive (never compared with
      "now"); None disables session splitting and date matching for it.
    * ``vector``: the entry's embedding, or None (then it gets no semantic score).
    * ``role``: who wrote it (Entry.role: ``"user"``, ``"assistant"`` ...), or None.
    """

    id: str
    thread_id: str
    position: int
    text: str
    name: str | None = None
    created_at: datetime | None = None
    vector: NDArray[np.floating] | None = field(default=None, compare=False, repr=False)
    role: str | None = None


def name_tokens(name: str) -> list[str]:
    """Lower-case word tokens of a speaker name ("Mary-Ann Lee" -> ["mary", "ann", "lee"])."""
    return tokenize(name)


_POSSESSIVE = re.compile("['\u2019]s?\\b")


def mentioned_speakers(query: str, names: Sequence[str]) -> set[str]:
    """The names (as given) whose first token or full name appears in ``query``.

    "What did Caroline's sister say?" mentions "Caroline" and "Caroline Smith".
    Only single-token matches of at least two letters count, so initials do not fire.
    """
    q_tokens = set(tokenize(_POSSESSIVE.sub("", query)))
    out: set[str] = set()
    for name in names:
        toks = [t for t in name_tokens(name) if len(t) >= 2]
        if toks and (toks[0] in q_tokens or (len(toks) > 1 and all(t in q_tokens for t in toks))):
            out.add(name)
    return out


# What the assistant said: "you recommended", "did you mention", "your suggestion",
# "remind me ... our previous chat". Present-tense requests ("can you suggest ...")
# ask for advice now and are not about the assistant's past words.
_ASSISTANT_SAID = re.compile(
    r"\byou(?:'ve| have| had)?\s+(?:\w+\s+){0,2}?(?:said|told|mentioned|recommended|suggested"
    r"|provided|gave|given|listed|shared|wrote|written|explained|described|offered|proposed"
    r"|named|quoted|made|played|showed|shown|included|came up with)\b"
    r"|\bdid you\b|\byour (?:answer|response|reply|recommendations?|suggestions?|advice|list)\b"
    r"|\bremind me\b.*\b(?:previous|earlier|last time)\b"
    r"|\b(?:previous|earlier|last) (?:chat|conversation|discussion)\b.*\bremind me\b",
    re.I,
)
_FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "i've", "i'd", "i'll"})


def asked_role(query: str) -> str | None:
    """The role whose messages answer ``query``: ``"assistant"`` when it asks what the
    assistant said ("what sealant did you recommend?"), ``"user"`` when it asks about
    the speaker's own life ("what breed is my dog?"), else None (English words only).

    >>> asked_role("Can you remind me which hotel you recommended?"), asked_role("Where did I go?")
    ('assistant', 'user')
    """
    if _ASSISTANT_SAID.search(query):
        return "assistant"
    words = re.findall(r"[a-z]+(?:'[a-z]+)?", query.lower().replace("\u2019", "'"))
    return "user" if _FIRST_PERSON.intersection(words) else None


class ConversationStructure:
    """Index arrays over a candidate list (order preserved: index i = candidates[i]).

    * ``prev[d-1][i]`` / ``next[d-1][i]``: index of the entry ``d`` places before/after
      ``i`` in the same thread and session, or -1 (``d`` up to ``window``).
    * ``session``: session number per entry; a new session starts in a thread when
      the gap to the previous entry exceeds ``session_gap`` (entries without
      ``created_at`` continue the current session).
    * ``names`` / ``name_index``: distinct speaker names and each entry's name index
      (-1 when none).
    * ``has_time``: entry text contains a time expression (given by the caller when it
      has already worked that out, as the ranker does, else read from the texts).
    * ``is_question``: 1.0 when the entry asks something (its text contains "?").
    * ``roles``: each entry's role (None when it has none); ``chat``: both "user" and
      "assistant" occur among them.
    """

    def __init__(
        self,
        candidates: Sequence[Candidate],
        session_gap: timedelta = timedelta(hours=1),
        window: int = 2,
        cross_session_neighbours: bool = False,
        has_time: Sequence[bool] | None = None,
    ) -> None:
        self.candidates = list(candidates)
        n = len(self.candidates)
        self.window = window
        self.ids = [c.id for c in self.candidates]

        places = [(c.thread_id, c.position) for c in self.candidates]
        order = sorted(range(n), key=places.__getitem__)  # stable: ties in candidate order
        sessions = [-1] * n  # a list, then one array: no numpy item write per candidate
        current = -1
        p: Candidate | None = None
        for i in order:
            c = self.candidates[i]
            new = True
            if p is not None and p.thread_id == c.thread_id:
                new = (
                    c.created_at is not None
                    and p.created_at is not None
                    and abs(c.created_at - p.created_at) > session_gap
                )
            if new:
                current += 1
            sessions[i] = current
            p = c
        session = np.array(sessions, dtype=np.int64)
        self.session = session
        self.n_sessions = current + 1

        # Neighbours are exact positions of a thread: the entry ``d`` places before
        # another is the one at ``position - d``, when it is a candidate too. A whole
        # thread links every pair of turns; a candidate set (the best hits and the
        # windows around them) links only turns that really follow each other, never
        # two hits that happen to be next to each other in the set.
        self.prev: list[IntArray] = []
        self.next: list[IntArray] = []
        at = {place: i for i, place in enumerate(places)}
        for d in range(1, window + 1):
            prev_of = [-1] * n
            next_of = [-1] * n
            for b, (tid, position) in enumerate(places):
                a = at.get((tid, position - d))
                if a is None or a == b:
                    continue
                if not cross_session_neighbours and sessions[a] != sessions[b]:
                    continue
                prev_of[b] = a
                next_of[a] = b
            self.prev.append(np.array(prev_of, dtype=np.int64))
            self.next.append(np.array(next_of, dtype=np.int64))

        names: dict[str, int] = {}
        name_index = np.full(n, -1, dtype=np.int64)
        for i, c in enumerate(self.candidates):
            if c.name:
                name_index[i] = names.setdefault(c.name, len(names))
        self.names = list(names)
        self.name_index = name_index
        if has_time is None:  # the ranker passes what it has memoised
            has_time = [has_time_expression(c.text) for c in self.candidates]
        self.has_time = np.fromiter(has_time, dtype=bool, count=n)
        self.is_question = np.fromiter(
            ("?" in c.text for c in self.candidates), dtype=np.float64, count=n
        )
        self.roles = [c.role for c in self.candidates]
        present = set(self.roles)
        #: a chat with an assistant: the candidates hold both users' and assistants' messages
        self.chat = "user" in present and "assistant" in present

        self._matrix: FloatArray | None = None
        self._has_vec: NDArray[np.bool_] | None = None

    @functools.cached_property
    def index_of(self) -> dict[str, int]:
        """Each candidate's index by its id (made on first use: a search reads none)."""
        return {c.id: i for i, c in enumerate(self.candidates)}

    def __len__(self) -> int:
        return len(self.candidates)

    # ------------------------------------------------------------------ signals
    def cosine(self, query_vector: NDArray[np.floating]) -> tuple[FloatArray, NDArray[np.bool_]]:
        """Cosine similarity of every candidate with ``query_vector`` and a mask of the
        candidates that have a vector (the others score 0)."""
        if self._matrix is None:
            n = len(self.candidates)
            vectors = [c.vector for c in self.candidates]
            dims = {v.shape[-1] for v in vectors if v is not None}
            dim = dims.pop() if len(dims) == 1 else 0
            given = [
                (i, v)
                for i, v in enumerate(vectors)
                if v is not None and dim and v.shape[-1] == dim
            ]
            at = [i for i, _ in given]
            has = np.zeros(n, dtype=bool)
            # ``np.array`` of the rows converts them in one pass (``np.stack`` of float32
            # rows then ``astype`` cost 1 ms at 170 rows; the same values)
            rows = np.array(
                [v if v.ndim == 1 else v.reshape(-1) for _, v in given], dtype=np.float64
            ).reshape(len(at), dim)
            # per row as ``np.linalg.norm`` of one vector computes it (its dot product):
            # the same bits as before, so no tie between candidates moves. ``matmul`` of
            # a stack of row @ column pairs runs that dot product (NumPy's vector @ vector
            # case) for every row in one call, not one Python call a row.
            norms = np.sqrt(np.matmul(rows[:, None, :], rows[:, :, None]).reshape(len(at)))
            keep = norms > 0
            if len(at) == n and keep.all():  # every row: divided in place, no scatter
                mat = np.divide(rows, norms[:, None], out=rows)
                has[:] = True
            else:  # one division, not a norm per row
                mat = np.zeros((n, dim), dtype=np.float64)
                where = np.asarray(at, dtype=np.int64)[keep]
                mat[where] = rows[keep] / norms[keep, None]
                has[where] = True
            self._matrix, self._has_vec = mat, has
        assert self._has_vec is not None
        q = np.asarray(query_vector, dtype=np.float64).reshape(-1)
        qn = float(np.linalg.norm(q))
        if qn == 0 or q.shape[0] != self._matrix.shape[1]:
            return np.zeros(len(self.candidates)), np.zeros(len(self.candidates), dtype=bool)
        return self._matrix @ (q / qn), self._has_vec

    def speaker_mask(self, query: str) -> FloatArray:
        """1.0 for entries written by a speaker the query names, else 0.0."""
        hit = mentioned_speakers(query, self.names)
        if not hit:
            return np.zeros(len(self.candidates))
        idx = np.array([self.names.index(h) for h in hit], dtype=np.int64)
        return np.isin(self.name_index, idx).astype(np.float64)

    def role_mask(self, query: str) -> FloatArray:
        """1.0 for the entries of the role the query asks about (:func:`asked_role`) and for
        the candidates that are no message (facts, documents: the boost only sets the other
        role's messages back, never a fact below the turn it came from), else 0.0; all
        zeros unless the candidates are a chat with an assistant (:attr:`chat`): a
        conversation between people, every turn a "user" message, is left as it is."""
        wanted = asked_role(query) if self.chat else None
        if wanted is None:
            return np.zeros(len(self.candidates))
        roles = np.array(self.roles, dtype=object)
        mask: FloatArray = ((roles == wanted) | (roles == None)).astype(np.float64)  # noqa: E711
        return mask

    def spread(self, values: FloatArray, weights: Sequence[float], backward: bool) -> FloatArray:
        """``sum_d weights[d-1] * values[neighbour_d(i)]`` where neighbour_d is the entry
        ``d`` places *before* i (``backward=True``: i inherits from the entries that
        precede it) or after it."""
        out = np.zeros_like(values)
        links = self.prev if backward else self.next
        for d, w in enumerate(weights[: self.window]):
            if not w:
                continue
            src = links[d]
            ok = src >= 0
            out[ok] += w * values[src[ok]]
        return out

    def session_pool(self, values: FloatArray, top: int = 3) -> FloatArray:
        """Per entry, the mean of the ``top`` highest ``values`` in its session."""
        out = np.zeros_like(values)
        if not len(values):
            return out
        order = np.lexsort((-values, self.session))
        sess_sorted = self.session[order]
        vals_sorted = values[order]
        starts = np.flatnonzero(np.r_[True, sess_sorted[1:] != sess_sorted[:-1]])
        ends = np.r_[starts[1:], len(order)]
        # the mean of each session's first ``min(top, size)`` sorted values, for every
        # session at once: added left to right, then divided, as ``ndarray.mean`` of so
        # few values does (the same bits; a loop per session cost 1.5 ms at 160 sessions)
        counts = np.minimum(ends - starts, top)
        total = np.zeros(len(starts))
        for j in range(top):
            total += np.where(counts > j, vals_sorted[np.minimum(starts + j, len(order) - 1)], 0.0)
        pooled = np.zeros(self.n_sessions)
        pooled[sess_sorted[starts]] = total / counts
        return pooled[self.session]
