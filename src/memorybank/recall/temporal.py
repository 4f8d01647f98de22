"""Dates and time words: what a query says about *when*, and how an entry matches it.

Two independent, language-light signals (English words only):

* **Date constraints.**  "in June", "on 8 May, 2023", "in 2022", "the week before
  16 November 2023" become date intervals.  An entry matches when its
  ``created_at`` falls inside an interval, with a soft tail after it (people talk
  about an event in the days *after* it happened: "last Saturday I ran ...") and
  a shorter one before it (plans are discussed ahead).
* **Temporal intent.**  "When did ...", "How long ago ...", "What year ..." ask
  for a time.  The memory that answers them usually carries a time expression
  ("yesterday", "last week", "two years ago", "next month", a date), so entries
  with one are preferred for such queries.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

from memorybank.stores.keyword.text import tokenize

__all__ = [
    "DateSpan",
    "date_match",
    "has_temporal_intent",
    "has_time_expression",
    "parse_date_spans",
    "tokens_have_time",
]

_MONTHS: dict[str, int] = {}
for _i, _name in enumerate(calendar.month_name):
    if _name:
        _MONTHS[_name.lower()] = _i
        _MONTHS[_name[:3].lower()] = _i
_MONTHS["sept"] = 9
del _MONTHS["may"]  # re-added below: "may" is also a verb, handled by the patterns
_MONTH_RE = "|".join(sorted([*_MONTHS, "may"], key=len, reverse=True))
_MONTHS["may"] = 5

_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\.?,?\s*(\d{{4}})?\b", re.I
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b({_MONTH_RE})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b,?\s*(\d{{4}})?\b", re.I
)
_MONTH_YEAR = re.compile(
    r"\b(?:(in|of|during|since|by|early|late|mid|until|before|after|last|next|this)\s+)?"
    rf"({_MONTH_RE})\.?,?\s*(\d{{4}})?\b",
    re.I,
)
_YEAR = re.compile(r"\b(19\d\d|20\d\d)\b")
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")

_INTENT = re.compile(
    r"^\s*when\b|\bwhat (?:time|date|day|year|month|week)\b|\bwhich (?:year|month|day|week)\b"
    r"|\bhow long\b|\bhow many (?:years|months|weeks|days)\b|\bwhat (?:\w+ )?(?:date|year)\b"
    r"|\bsince when\b|\bhow (?:old|recently)\b",
    re.I,
)

# The words of a time expression, matched against an entry's tokens (one set lookup a
# token: a regex alternation of these words cost 29 us a 12-word message, 5 ms a search
# of 170 candidates; the tokens cost 5 us and are the keyword index's anyway).
_TIME_TOKENS: frozenset[str] = frozenset(
    """yesterday today tonight tomorrow tmrw ago recently lately last next upcoming
    weekend week weeks month months year years morning evening afternoon night
    monday tuesday wednesday thursday friday saturday sunday spring summer autumn fall
    winter christmas thanksgiving easter birthday anniversary soon earlier later
    since until before after finally just decade decades days day""".split()
) | frozenset(_MONTHS)


#: the time words and the years 1900-2099 as tokens (``tokens_have_time``)
_TIME_OR_YEAR: frozenset[str] = _TIME_TOKENS | frozenset(str(y) for y in range(1900, 2100))


@dataclass(frozen=True, slots=True)
class DateSpan:
    """An inclusive calendar interval a query refers to; ``year_known`` False when
    the year was not written ("in June"): then any year matches."""

    start: date
    end: date
    year_known: bool = True


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _month_span(year: int, month: int, year_known: bool) -> DateSpan:
    last = calendar.monthrange(year, month)[1]
    return DateSpan(date(year, month, 1), date(year, month, last), year_known)


def parse_date_spans(text: str) -> list[DateSpan]:
    """Calendar intervals named in ``text`` (days, months, years; English).

    A month without a year is returned with ``year_known=False`` (year 2000 is a
    placeholder; :func:`date_match` then compares month only).
    """
    spans: list[DateSpan] = []
    taken: list[tuple[int, int]] = []

    def free(m: re.Match[str]) -> bool:
        return all(m.end() <= a or m.start() >= b for a, b in taken)

    for m in _ISO.finditer(text):
        d = _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if d:
            spans.append(DateSpan(d, d))
            taken.append(m.span())
    for pattern, order in ((_DAY_MONTH_YEAR, "dmy"), (_MONTH_DAY_YEAR, "mdy")):
        for m in pattern.finditer(text):
            if not free(m):
                continue
            if order == "dmy":
                day_s, mon_s, year_s = m.group(1), m.group(2), m.group(3)
            else:
                mon_s, day_s, year_s = m.group(1), m.group(2), m.group(3)
            month = _MONTHS[mon_s.lower().rstrip(".")]
            if mon_s.lower() == "may" and order == "mdy" and not year_s:
                continue  # "may 2 people ..." is not a date without a year
            year = int(year_s) if year_s else 2000
            d = _safe_date(year, month, int(day_s))
            if d:
                spans.append(DateSpan(d, d, year_s is not None))
                taken.append(m.span())
    for m in _MONTH_YEAR.finditer(text):
        if not free(m):
            continue
        prefix, mon_s, year_s = m.group(1), m.group(2), m.group(3)
        if mon_s.lower() == "may" and not year_s and not prefix:
            continue  # the modal verb "may"
        month = _MONTHS[mon_s.lower()]
        spans.append(_month_span(int(year_s) if year_s else 2000, month, year_s is not None))
        taken.append(m.span())
    for m in _YEAR.finditer(text):
        if not free(m):
            continue
        year = int(m.group(1))
        spans.append(DateSpan(date(year, 1, 1), date(year, 12, 31)))
        taken.append(m.span())
    return spans


def date_match(
    when: datetime | date | None,
    spans: list[DateSpan],
    after_days: float = 14.0,
    before_days: float = 7.0,
) -> float:
    """How well ``when`` falls into any of ``spans``: 1 inside, fading linearly to 0
    ``after_days`` after the end / ``before_days`` before the start; 0 without spans."""
    if when is None or not spans:
        return 0.0
    day = when.date() if isinstance(when, datetime) else when
    best = 0.0
    for span in spans:
        if span.year_known:
            candidates = [(span.start, span.end)]
        else:  # "in June": the June of the entry's year, or of the year before
            candidates = []
            for year in (day.year, day.year - 1):
                s = _safe_date(year, span.start.month, span.start.day)
                e = _safe_date(year, span.end.month, span.end.day)
                if s and e:
                    candidates.append((s, e))
        for start, end in candidates:
            if start <= day <= end:
                return 1.0
            if day > end and after_days > 0:
                best = max(best, 1.0 - (day - end).days / after_days)
            elif day < start and before_days > 0:
                best = max(best, 1.0 - (start - day).days / before_days)
    return max(0.0, best)


def has_temporal_intent(query: str) -> bool:
    """True for queries that ask for a time ("When did ...", "How long ago ...")."""
    return _INTENT.search(query) is not None


def has_time_expression(text: str) -> bool:
    """True when ``text`` contains a time word, weekday, month, year or relative time."""
    return tokens_have_time(tokenize(text))


def tokens_have_time(tokens: Iterable[str]) -> bool:
    """``has_time_expression`` over tokens already made
    (``memorybank.stores.keyword.text.tokenize``: letters and ASCII digits). One set test
    in C, not a test per token: this runs for every candidate the ranking has not seen."""
    return not _TIME_OR_YEAR.isdisjoint(tokens)
