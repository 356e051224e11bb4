"""Hypothesis strategies for the cron texts tickwheel accepts (`core/cron.py`, `cron_quartz.py`).

Every construct of the grammar is drawn: 5 fields or 6 with leading seconds, numbers (some
zero-padded), month and weekday names in any case, `*` and `?`, lists, ranges in either order
(equal, ascending, wrapping), steps on ranges, on `*` and on a start (`a/n`), day-of-week 7,
the Quartz day terms (`L`, `L-n`, `nW`, `LW`, `dL`, `Ld`, `d#n`), the `@` macros and any
whitespace between fields. Steps stay within the field's span, as the grammar requires; the
texts may still never fire (`30 2`, `7/2` in day-of-week), which the parser refuses.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests.unit.core._cron_oracle import DAYS, MACROS, MONTHS

MONTH_NAMES = sorted(MONTHS, key=MONTHS.__getitem__)
DAY_NAMES = sorted(DAYS, key=DAYS.__getitem__)


def _cased(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name, name.lower(), name.title()])


def _number(low: int, high: int, favoured: tuple[int, ...] = ()) -> st.SearchStrategy[str]:
    n = st.integers(low, high)
    if favoured:
        n = st.one_of(st.sampled_from(favoured), n)
    return st.one_of(n.map(str), n.map(lambda v: f"{v:02d}"))


def _items(
    low: int,
    high: int,
    *,
    top: int | None = None,
    names: list[str] | None = None,
    favoured: tuple[int, ...] = (),
    question: bool = False,
) -> st.SearchStrategy[str]:
    """One plain list item of a field over [low, high]; `top` is a higher value the field
    also takes (day-of-week 7), `names` the field's names in value order."""
    value = _number(low, top or high, favoured)
    if names:
        named = st.sampled_from(names).flatmap(_cased)
        value = st.one_of(value, named)
    step = st.integers(1, high - low).map(str)
    stars = ["*", "?"] if question else ["*"]
    return st.one_of(
        value,
        st.tuples(value, value).map("-".join),
        st.tuples(value, value, step).map(lambda t: f"{t[0]}-{t[1]}/{t[2]}"),
        st.tuples(st.sampled_from(stars), step).map("/".join),
        st.tuples(value, step).map("/".join),
        st.sampled_from(stars),
    )


def _field(item: st.SearchStrategy[str], star: str = "*") -> st.SearchStrategy[str]:
    listed = st.lists(item, min_size=1, max_size=3).map(",".join)
    return st.one_of(st.just(star), listed)


def _either_case(term: str) -> st.SearchStrategy[str]:
    return st.sampled_from([term, term.lower()])


_DOW_TOKEN = st.one_of(st.integers(0, 7).map(str), st.sampled_from(DAY_NAMES))
DOM_TERMS = st.one_of(
    st.sampled_from(["L", "LW"]),
    st.integers(0, 30).map(lambda n: f"L-{n}"),
    st.integers(1, 31).map(lambda n: f"{n}W"),
).flatmap(_either_case)
DOW_TERMS = st.one_of(
    _DOW_TOKEN.map(lambda d: f"{d}L"),
    st.integers(0, 7).map(lambda d: f"L{d}"),
    st.tuples(_DOW_TOKEN, st.integers(1, 5)).map(lambda t: f"{t[0]}#{t[1]}"),
).flatmap(_either_case)

SECOND = _field(_items(0, 59, favoured=(0, 30, 59)))
MINUTE = _field(_items(0, 59, favoured=(0, 30, 59)))
# Hours around the clock changes: 00-03 (Santiago, Havana change at midnight), 22-23.
HOUR = _field(_items(0, 23, favoured=(0, 1, 2, 3, 22, 23)))
DAY_OF_MONTH = st.one_of(
    st.just("?"),
    _field(st.one_of(_items(1, 31, favoured=(1, 28, 29, 30, 31), question=True), DOM_TERMS)),
)
MONTH = _field(_items(1, 12, names=MONTH_NAMES, favoured=(2, 3, 10, 11)))
DAY_OF_WEEK = st.one_of(
    st.just("?"),
    _field(
        st.one_of(_items(0, 6, top=7, names=DAY_NAMES, favoured=(0, 7), question=True), DOW_TERMS)
    ),
)
SPACE = st.sampled_from([" ", " ", " ", "  ", "\t"])


def _joined(fields: list[str], spaces: list[str]) -> str:
    return "".join(f + s for f, s in zip(fields, [*spaces, ""], strict=False)).strip()


FIVE = st.tuples(MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK).map(list)
SIX = st.tuples(SECOND, MINUTE, HOUR, DAY_OF_MONTH, MONTH, DAY_OF_WEEK).map(list)
MACRO = st.sampled_from(sorted(MACROS)).flatmap(lambda m: st.sampled_from([m, m.upper()]))
FIELDS = st.tuples(st.one_of(FIVE, SIX), st.lists(SPACE, min_size=5, max_size=5)).map(
    lambda t: _joined(t[0], t[1])
)
# One expression in ten a macro: there are only seven of them.
EXPRESSION = st.integers(0, 9).flatmap(lambda i: MACRO if i == 0 else FIELDS)
