"""Dev only: index keys expanded at write time (issue 44, round 8), simulated and measured.

    python bench/key_expansion_lab.py lme [--wordnet DIR] [--setting NAME ...] [--types T,..]
    python bench/key_expansion_lab.py locomo [--wordnet DIR] [--setting NAME ...]
        [--emb-cache PATH --backend onnx-int8 | --no-embedder]

The benchmark paper's fact-augmented key expansion without an LLM: each turn is written
with keys derived from its own text appended to it (after a ``KEYS`` marker), so both the
store's full-text index (which picks the candidates) and the ranking's BM25 over the
candidates' text see them; with an embedder the vector is the one of the text without
the keys (the embedder is handed the text before the marker). What a turn gets, by
setting (names joined with ``+`` combine):

* ``rules``: what ``memorybank.extract.RuleExtractor`` finds in the turn: entity names,
  relation names as words ("works at"), observations and facts as text;
* ``numbers``: numbers and dates normalised (number words <-> digits up to 20, "25th" ->
  "25", "$340,000" -> "340000", month abbreviations -> month names, a date's ISO form);
* ``wnL[-dD][-user]``: WordNet category words: each noun of the turn (and each noun
  compound of two words WordNet holds, "hearing aid") in its first sense, its hypernyms
  up to ``L`` levels up (instance hypernyms too: "Louvre" -> museum), each hypernym's
  head lemma as words ("stringed instrument"), leaving out hypernyms fewer than ``D``
  levels below WordNet's root (default 5: "entity", "object", "artifact" ... add
  nothing); ``-user`` expands only the user's turns.

WordNet is not a dependency of memorybank and not in the venv's data: ``--wordnet`` is a
directory holding WordNet 3.0's ``index.noun`` / ``data.noun`` / ``noun.exc`` (e.g. the
Debian package ``wordnet-base`` unpacked with ``dpkg -x``). Measured here only to learn
whether category keys would help at all; the library would need its own word list.

``lme`` runs ``bench_longmemeval.evaluate_question`` (no embedder) on every question per
setting and prints the benchmark's per-type table for each, then each question scored
with the setting best on the 109 others (objective: session all@5 + NDCG@10 + turn
any@10, as in ``recall_lab.py``). ``locomo`` runs the LoCoMo harness at thread and user
scope with the turns' text expanded. Nothing here is library behaviour.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import copy
import importlib
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from memorybank.extract import RuleExtractor  # noqa: E402
from memorybank.stores.keyword.text import STOP_WORDS, tokenize  # noqa: E402

KEYS = "\n\u241e keys:"  # the marker between a turn's text and its keys
OBJECTIVE = ("all@5", "ndcg@10", "turn@10")
Expander = Callable[[str, str], list[str]]  # (text, role) -> keys


# ---------------------------------------------------------------- WordNet, read by hand
#: WordNet's lexicographer files of nouns naming things: act, animal, artifact, event,
#: food, group, location, person, plant
THINGS = frozenset((4, 5, 6, 11, 13, 14, 15, 18, 20))


class WordNet:
    """The noun half of WordNet 3.0's database files: lemma -> synsets, synset ->
    hypernyms and head lemma, and each synset's depth below the root."""

    def __init__(self, root: Path) -> None:
        self.senses: dict[str, list[str]] = {}
        #: per part of speech, lemma -> how many of its senses' uses were tagged
        self.tagged: dict[str, dict[str, int]] = {}
        for pos in ("noun", "verb", "adj"):
            tagged = self.tagged[pos] = {}
            for line in (root / f"index.{pos}").read_text(encoding="latin-1").splitlines():
                if line.startswith(" "):
                    continue
                parts = line.split()
                synsets = int(parts[2])
                tagged[parts[0]] = int(parts[len(parts) - synsets - 1])
                if pos == "noun":
                    self.senses[parts[0]] = parts[len(parts) - synsets :]
        self.lexfile: dict[str, int] = {}
        self.head: dict[str, str] = {}
        self.up: dict[str, list[str]] = {}
        for line in (root / "data.noun").read_text(encoding="latin-1").splitlines():
            if line.startswith(" "):
                continue
            parts = line.split(" | ", 1)[0].split()
            offset, words = parts[0], int(parts[3], 16)
            self.head[offset] = parts[4].lower()
            self.lexfile[offset] = int(parts[1])
            at = 4 + 2 * words
            pointers = int(parts[at])
            ups = []
            for i in range(pointers):
                symbol, target, pos = parts[at + 1 + 4 * i : at + 4 + 4 * i]
                if symbol in ("@", "@i") and pos == "n":
                    ups.append(target)
            self.up[offset] = ups
        self.exceptions: dict[str, str] = {}
        for line in (root / "noun.exc").read_text(encoding="latin-1").splitlines():
            parts = line.split()
            if len(parts) >= 2:
                self.exceptions[parts[0]] = parts[1]
        self._depth: dict[str, int] = {}

    def depth(self, synset: str) -> int:
        """The fewest hypernym steps from ``synset`` to a root."""
        known = self._depth.get(synset)
        if known is None:
            ups = self.up.get(synset, [])
            self._depth[synset] = 0  # cycles (none in WordNet) end here
            known = 1 + min((self.depth(u) for u in ups), default=-1)
            self._depth[synset] = known
        return known

    def lemma(self, word: str) -> str | None:
        """``word``'s noun lemma in WordNet ("guitars" -> "guitar"), or None."""
        if word in self.senses:
            return word
        base = self.exceptions.get(word)
        if base is not None and base in self.senses:
            return base
        for suffix, repl in (("ies", "y"), ("es", ""), ("s", ""), ("men", "man")):
            if word.endswith(suffix) and word[: -len(suffix)] + repl in self.senses:
                return word[: -len(suffix)] + repl
        return None

    def thing(self, word: str, lemma: str) -> bool:
        """Whether ``lemma``'s first sense names a thing (an act, animal, artifact, event,
        food, group, place, person or plant) and ``word`` is used more as a noun than as
        a verb or adjective (WordNet's tagged counts; "playing", "black" are not)."""
        if self.lexfile[self.senses[lemma][0]] not in THINGS:
            return False
        noun = self.tagged["noun"].get(lemma, 0)
        verbs = [word]
        for suffix, repl in (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("s", "")):
            if word.endswith(suffix):
                verbs.append(word[: -len(suffix)] + repl)
        other = max(self.tagged["verb"].get(v, 0) for v in verbs)
        return noun >= max(other, self.tagged["adj"].get(word, 0))

    def categories(self, lemma: str, levels: int, min_depth: int) -> list[str]:
        """Head lemmas of the first sense's hypernyms up to ``levels`` steps up."""
        out: list[str] = []
        frontier = self.senses[lemma][:1]
        for _ in range(levels):
            frontier = [u for s in frontier for u in self.up.get(s, [])]
            out.extend(self.head[s] for s in frontier if self.depth(s) >= min_depth)
        return out


# ---------------------------------------------------------------- expanders
_extractor = RuleExtractor()


def rule_keys(text: str, role: str) -> list[str]:
    ex = _extractor.extract(text)
    keys = [e.name for e in ex.entities]
    keys += [r.type.replace("_", " ") for r in ex.relations]
    keys += [o.text for o in ex.observations]
    keys += [f.statement for f in ex.facts]
    return keys


_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    " fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_MONTHS = {
    "jan": "january",
    "feb": "february",
    "mar": "march",
    "apr": "april",
    "jun": "june",
    "jul": "july",
    "aug": "august",
    "sep": "september",
    "sept": "september",
    "oct": "october",
    "nov": "november",
    "dec": "december",
}
_MONTH_NUMBER = {
    m: i
    for i, m in enumerate(
        (
            "january february march april may june july august september october november december"
        ).split(),
        1,
    )
}
_ORDINAL = re.compile(r"\b(\d{1,4})(?:st|nd|rd|th)\b", re.I)
_MONEY = re.compile(r"\$\s?(\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_GROUPED = re.compile(r"\b\d{1,3}(?:,\d{3})+\b")
_DATE = re.compile(r"\b([A-Za-z]{3,9})\.? (\d{1,2})(?:st|nd|rd|th)?(?:,? (\d{4}))?\b")


def number_keys(text: str, role: str) -> list[str]:
    keys: list[str] = []
    for token in tokenize(text):
        if token in _NUMBER_WORDS:
            keys.append(str(_NUMBER_WORDS.index(token)))
        elif token.isdigit() and int(token) <= 20 and len(token) <= 2:
            keys.append(_NUMBER_WORDS[int(token)])
        elif token in _MONTHS:
            keys.append(_MONTHS[token])
    keys += [m[1] for m in _ORDINAL.finditer(text)]
    keys += [m[1].replace(",", "") + " dollars" for m in _MONEY.finditer(text)]
    keys += [m[0].replace(",", "") for m in _GROUPED.finditer(text)]
    for m in _DATE.finditer(text):
        month = _MONTHS.get(m[1].lower(), m[1].lower())
        if month in _MONTH_NUMBER and int(m[2]) <= 31:
            keys.append(f"{_MONTH_NUMBER[month]:02d}-{int(m[2]):02d}")
            if m[3]:
                keys.append(f"{m[3]}-{_MONTH_NUMBER[month]:02d}-{int(m[2]):02d}")
    return keys


def wordnet_keys(
    wn: WordNet, levels: int, min_depth: int, user_only: bool, things: bool
) -> Expander:
    @cache
    def of_lemma(lemma: str) -> tuple[str, ...]:
        return tuple(c.replace("_", " ") for c in wn.categories(lemma, levels, min_depth))

    @cache
    def of_word(word: str) -> tuple[str, ...]:
        if word in STOP_WORDS or len(word) < 3 or word.isdigit():
            return ()
        lemma = wn.lemma(word)
        if lemma is None or (things and not wn.thing(word, lemma)):
            return ()
        return of_lemma(lemma)

    def expand(text: str, role: str) -> list[str]:
        if user_only and role != "user":
            return []
        words = tokenize(text)
        keys: list[str] = []
        for a, b in itertools.pairwise(words):
            compound = wn.lemma(f"{a}_{b}")
            if compound and not (things and not wn.thing(compound, compound)):
                keys.extend(of_lemma(compound))
        for w in words:
            keys.extend(of_word(w))
        return list(dict.fromkeys(keys))

    return expand


_WN_SETTING = re.compile(r"wn(\d)(?:-d(\d+))?(-user)?(-t)?$")


def expander(setting: str, wordnet: Path | None) -> Expander | None:
    """The expander a setting names (``none`` -> None)."""
    if setting == "none":
        return None
    parts: list[Expander] = []
    for name in setting.split("+"):
        if name == "rules":
            parts.append(rule_keys)
        elif name == "numbers":
            parts.append(number_keys)
        elif m := _WN_SETTING.match(name):
            if wordnet is None:
                raise SystemExit(f"{name}: --wordnet DIR is needed")
            parts.append(
                wordnet_keys(_wordnet(wordnet), int(m[1]), int(m[2] or 5), bool(m[3]), bool(m[4]))
            )
        else:
            raise SystemExit(f"unknown setting {name!r}")

    def expand(text: str, role: str) -> list[str]:
        return [k for p in parts for k in p(text, role)]

    return expand


@lru_cache(maxsize=1)
def _wordnet(root: Path) -> WordNet:
    return WordNet(root)


def expanded(text: str, role: str, expand: Expander | None, stats: list[int]) -> str:
    if expand is None or not text:
        return text
    keys = expand(text, role)
    stats[0] += 1
    stats[1] += len(tokenize(" ".join(keys)))
    stats[2] += len(tokenize(text))
    return f"{text}{KEYS} {' ; '.join(keys)}" if keys else text


# ---------------------------------------------------------------- LongMemEval
def _lme_questions(args: argparse.Namespace) -> tuple[Any, list[dict[str, Any]]]:
    import bench.bench_longmemeval as lme

    types = [t for t in args.types.split(",") if t]
    return lme, lme.load(args.data or lme.default_data(), 0, types)


def run_lme(args: argparse.Namespace) -> None:
    lme, questions = _lme_questions(args)
    results: dict[str, list[dict[str, float]]] = {}
    bm25: dict[str, list[dict[str, float]]] = {}
    for setting in args.setting:
        expand = expander(setting, args.wordnet)
        stats = [0, 0, 0]
        start = time.perf_counter()
        rows, rows_bm25 = [], []
        for q in questions:
            q2 = copy.copy(q)
            q2["haystack_sessions"] = [
                [
                    {**t, "content": expanded(t["content"], t["role"], expand, stats)}
                    for t in session
                ]
                for session in q["haystack_sessions"]
            ]
            per_system, _, _, _ = lme.evaluate_question(q2, None)
            rows.append(per_system["memorybank"])
            rows_bm25.append(per_system["BM25"])
        results[setting], bm25[setting] = rows, rows_bm25
        if args.save is not None:
            args.save.write_text(json.dumps(results))
        added = f"{stats[1] / max(1, stats[2]):.0%} more terms" if stats[0] else "no keys"
        print(f"\n### {setting} ({added}; {time.perf_counter() - start:.0f} s)", flush=True)
        print(_table(questions, rows, rows_bm25))
    first = args.setting[0]
    for setting in args.setting[1:]:
        moved = []
        for i, q in enumerate(questions):
            diff = [
                f"{m} {results[first][i][m]:.2f}->{results[setting][i][m]:.2f}"
                for m in OBJECTIVE
                if results[setting][i].get(m) != results[first][i].get(m)
            ]
            if diff:
                moved.append(f"  {q['question_id']} {q['question_type']}: {', '.join(diff)}")
        print(f"\n{setting} against {first}: {len(moved)} questions moved")
        print("\n".join(moved))
    if len(args.setting) > 1:
        print("\n### held out: each question with the setting best on the others")
        chosen: dict[str, int] = {}
        held = []
        totals = {s: [sum(r[m] for m in OBJECTIVE) for r in results[s]] for s in args.setting}
        sums = {s: sum(v) for s, v in totals.items()}
        for i in range(len(questions)):
            # ties go to the first setting listed (put the default first)
            best = max(args.setting, key=lambda s: sums[s] - totals[s][i])
            chosen[best] = chosen.get(best, 0) + 1
            held.append(results[best][i])
        print("chosen: " + ", ".join(f"{s} {n}" for s, n in chosen.items()))
        print(_table(questions, held, None))


def _table(
    questions: list[dict[str, Any]],
    rows: list[dict[str, float]],
    rows_bm25: list[dict[str, float]] | None,
) -> str:
    import bench.bench_longmemeval as lme

    by_type: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_type.setdefault(q["question_type"], []).append(i)
    out = [
        "| type | n | system | " + " | ".join(lme.COLUMNS) + " |",
        "|---|---|---|" + "---|" * len(lme.COLUMNS),
    ]
    groups = [*by_type.items(), ("**overall**", list(range(len(questions))))]
    for name, idx in groups:
        for system, data in (("memorybank", rows), ("BM25", rows_bm25)):
            if data is None:
                continue
            cells = []
            for col in lme.COLUMNS:
                vals = [data[i][col] for i in idx if col in data[i]]
                cells.append(f"{sum(vals) / len(vals):.3f}" if vals else "-")
            out.append(f"| {name} | {len(idx)} | {system} | " + " | ".join(cells) + " |")
    return "\n".join(out)


# ---------------------------------------------------------------- LoCoMo
def run_locomo(args: argparse.Namespace) -> None:
    lm: Any = importlib.import_module("bench.locomo_memorybank")

    messages, memory_class, cached_class = lm._messages, lm.Memory, lm.CachedEmbedder

    class Stripped(cached_class):  # type: ignore[misc, valid-type]
        """The cached embedder handed each text without its keys (the vector stays the
        text's, and the cache serves it)."""

        def embed(self, texts: list[str]) -> list[list[float]]:
            return super().embed([t.split(KEYS, 1)[0] for t in texts])  # type: ignore[no-any-return]

        async def aembed(self, texts: list[str]) -> list[list[float]]:
            return self.embed(texts)

    lm.CachedEmbedder = Stripped
    if args.no_embedder:
        lm.Memory = lambda url, embedder=None: memory_class(url)
    argv = ["--scope", "both", "--backend", args.backend]
    if args.emb_cache is not None and not args.no_embedder:
        argv += ["--emb-cache", str(args.emb_cache)]
    for setting in args.setting:
        expand = expander(setting, args.wordnet)
        stats = [0, 0, 0]

        def patched(
            session_turns: list[dict[str, Any]],
            expand: Expander | None = expand,
            stats: list[int] = stats,
        ) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = messages(session_turns)
            for m in out:
                m["content"] = expanded(m["content"], "user", expand, stats)
            return out

        lm._messages = patched
        print(f"\n### {setting}", flush=True)
        lm.main(argv)
        print(f"({stats[1] / max(1, stats[2]):.0%} more terms)" if stats[0] else "(no keys)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", choices=("lme", "locomo"))
    parser.add_argument("--wordnet", type=Path, default=None)
    parser.add_argument("--setting", action="append", default=[])
    parser.add_argument("--types", default="")
    parser.add_argument("--save", type=Path, default=None, help="lme: each setting's scores (JSON)")
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--emb-cache", type=Path, default=None)
    parser.add_argument("--backend", default="onnx-int8")
    parser.add_argument("--no-embedder", action="store_true")
    args = parser.parse_args()
    args.setting = args.setting or ["none"]
    if args.bench == "lme":
        run_lme(args)
    else:
        run_locomo(args)


if __name__ == "__main__":
    main()
