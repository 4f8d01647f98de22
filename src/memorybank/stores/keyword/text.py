"""Text analysis for keyword search: tokenising, stop words and Snowball stemming.

One :class:`Analyzer` is used for both the indexed documents and the query, so
"running", "runs" and "run" meet on the same term ("run").  Stemming uses
PyStemmer (the C build of the Snowball stemmers); results are memoised per word
because conversational text repeats a small vocabulary many times.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["STOP_WORDS", "Analyzer", "default_analyzer", "tokenize"]

# English function words.  Kept short on purpose: words such as "when", "where",
# "first" or "last" are NOT here because they carry intent that other signals
# read (temporal intent) and removing them from the keyword query is done by
# the query analyser, not by the index.  Contractions are split by the
# tokeniser ("I'm" -> "i", "m"), so their tails are listed.
STOP_WORDS: frozenset[str] = frozenset(
    """a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his
    how i if in into is it its itself just me more most my myself no nor not now of off
    on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through
    to too under until up very was we were what when where which while who whom why
    will with would you your yours yourself yourselves s t d ll m re ve also get got
    yeah oh hey hi wow really""".split()
)

# A word and the apostrophe suffix it swallows ("don't" -> "don"): only the group is kept.
_WORD = re.compile(r"([a-z0-9]+)(?:'[a-z]+)?")


#: Bytes: a-z and 0-9 kept, every other byte a space (``tokenize`` without an apostrophe).
_SEPARATE = bytes(b if 97 <= b <= 122 or 48 <= b <= 57 else 32 for b in range(256))


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens (letters/digits); an apostrophe suffix is dropped."""
    low = text.lower()
    if "'" in low:
        return _WORD.findall(low)
    # The same tokens, 3x faster (this runs for every text a search ranks first): the
    # runs of [a-z0-9], every other character (one "?" each if not ASCII) a separator.
    return low.encode("ascii", "replace").translate(_SEPARATE).decode("ascii").split()


def _stemmer(language: str) -> Any:
    """PyStemmer's Snowball stemmer for ``language``, its cache off (see ``Analyzer``).
    The C module loads with the first analyzer: a process that ranks no text never does."""
    import Stemmer

    return Stemmer.Stemmer(language, 0)


class Analyzer:
    """Turns text into index terms: tokenise, drop stop words, stem.

    ``language`` is any Snowball language PyStemmer knows ("english", "german",
    ...); ``None`` disables stemming.  ``stop_words`` replaces the English list.
    """

    def __init__(
        self,
        language: str | None = "english",
        stop_words: Iterable[str] | None = None,
    ) -> None:
        self.language = language
        self.stop_words: frozenset[str] = (
            STOP_WORDS if stop_words is None else frozenset(w.lower() for w in stop_words)
        )
        # PyStemmer's own cache (10,000 words by default) is off: this class memoises
        # every word it stems, and that cache made a miss cost 6 us instead of 0.7 us.
        self._stemmer = _stemmer(language) if language else None
        self._cache: dict[str, str] = {}

    def stem(self, word: str) -> str:
        """Stem one lower-case word (memoised)."""
        if self._stemmer is None:
            return word
        hit = self._cache.get(word)
        if hit is None:
            hit = str(self._stemmer.stemWord(word))
            if len(self._cache) < 200_000:
                self._cache[word] = hit
        return hit

    def stems(self) -> Mapping[str, str]:
        """The words stemmed so far and their stems (read-only; empty without a stemmer,
        whose ``stem`` is the word itself). The memo itself, typed read-only: a proxy
        made each ``get`` of the ranking's analysis loop a third slower."""
        return self._cache

    def terms(self, text: str) -> list[str]:
        """Index terms of ``text`` in order (duplicates kept, so tf can be counted)."""
        stop = self.stop_words
        return [self.stem(t) for t in tokenize(text) if t not in stop]


_DEFAULT: Analyzer | None = None


def default_analyzer() -> Analyzer:
    """A shared English analyser (stop words + Snowball English stemmer)."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Analyzer()
    return _DEFAULT
