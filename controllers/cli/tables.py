"""Tables a person reads (`-o table` and `-o wide`, the demo): kubectl-style left-aligned
columns three spaces apart, one line per row, that fit a terminal.

With a width (120 by default) the columns the caller marks as shrinkable give way, widest first,
until every line fits: a list of items (a cell given as a list, e.g. clusters) keeps the items
that fit and counts the rest (`a,b (+16)`, or `+18 more` when none fits), other text ends
in `...`. Numbers are never cut. Nothing wraps. Without a width (`-o wide`) every cell is shown
whole.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

__all__ = ["TABLE_WIDTH", "Cell", "column_widths", "fit", "table"]

TABLE_WIDTH = 120
"""The default line width of a table, in characters."""

Cell = str | list[str] | tuple[str, ...]
"""A cell: text, or a list of items shown comma-separated."""

_GAP = "   "
_NARROWEST = 4  # a shrunk column keeps at least this many characters ("FAIL", "-100")
_NUMBER = re.compile(r"[-+]?\d+(/[-+]?\d+)*")  # 12, -100, 4032/100: never cut
_ELLIPSIS = "..."


def _text(cell: Cell) -> str:
    return cell if isinstance(cell, str) else ",".join(cell)


def fit(cell: Cell, width: int) -> str:
    """The cell in at most `width` characters: whole if it fits, else a list keeps its first
    items and counts the others, and text is cut with `...`."""
    text = _text(cell)
    if len(text) <= width:
        return text
    if not isinstance(cell, str):
        return _elide(list(cell), width)
    if width <= len(_ELLIPSIS):
        return text[:width]
    return text[: width - len(_ELLIPSIS)] + _ELLIPSIS


def _more(count: int) -> str:
    """What a list cell says when not even its first item fits: `+18 more`."""
    return f"+{count} more"


def _elide(items: list[str], width: int) -> str:
    """As many leading items as fit, with the count of the others: `a,b (+16)`, or `+18 more`
    when not even the first fits (a table keeps its list columns that wide; `+18` below it)."""
    used = 0
    best = _more(len(items)) if len(_more(len(items))) <= width else f"+{len(items)}"
    for kept, item in enumerate(items, start=1):
        used += len(item) + (1 if kept > 1 else 0)
        if used + len(f" (+{len(items) - kept})") > width:
            break
        best = ",".join(items[:kept]) + f" (+{len(items) - kept})"
    return best[:width]


def _floor(cells: list[str]) -> int:
    """How narrow a shrinkable column may get: numbers stay whole."""
    numbers = [len(c) for c in cells if _NUMBER.fullmatch(c)]
    return max([_NARROWEST, *numbers])


def _list_floor(rows: Sequence[Sequence[Cell]], column: int) -> int:
    """How narrow a column of lists may get: `+18 more` stays whole."""
    lists = [row[column] for row in rows if not isinstance(row[column], str)]
    return max((len(_more(len(cell))) for cell in lists if cell), default=0)


def _shrunk(widths: list[int], floors: dict[int, int], excess: int) -> list[int]:
    """The widths with `excess` characters taken from the shrinkable columns (`floors`: index
    -> narrowest width), the widest first: every column above a common level is cut to it."""

    def cut(level: int) -> int:
        return sum(max(0, widths[i] - max(level, floor)) for i, floor in floors.items())

    low, high = 0, max(widths)  # cut(high) == 0 < excess
    if cut(low) <= excess:
        high = low + 1  # even at their floors the lines are too long: as narrow as they get
    while high - low > 1:
        middle = (low + high) // 2
        if cut(middle) >= excess:
            low = middle
        else:
            high = middle
    out = list(widths)
    for i, floor in floors.items():
        out[i] = min(widths[i], max(low, floor))
    spare = cut(low) - excess  # columns cut to the level by more than needed get it back
    for i in floors:
        if spare > 0 and out[i] < widths[i] and out[i] == low:
            out[i] += 1
            spare -= 1
    return out


def column_widths(
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    width: int | None = TABLE_WIDTH,
    shrink: Collection[int] = (),
) -> list[int]:
    """The width `table` gives each column: a cell longer than its column's is cut."""
    texts = [[_text(c) for c in row] for row in rows]
    columns = list(zip(header, *texts, strict=True)) if texts else [(h,) for h in header]
    widths = [max(len(c) for c in column) for column in columns]
    if width is not None:
        floors = {i: max(_floor(list(columns[i][1:])), _list_floor(rows, i)) for i in shrink}
        excess = sum(widths) + len(_GAP) * (len(widths) - 1) - width
        if excess > 0:
            widths = _shrunk(widths, floors, excess)
    return widths


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    width: int | None = TABLE_WIDTH,
    shrink: Collection[int] = (),
) -> str:
    """The rows under the header; with a `width`, the columns whose index is in `shrink` give
    way (widest first) until the lines fit, or until they are as narrow as they may get."""
    widths = column_widths(header, rows, width=width, shrink=shrink)
    lines = []
    for row in [list(header), *rows]:
        cells = [fit(c, w) for c, w in zip(row, widths, strict=True)]
        lines.append(_GAP.join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip())
    return "\n".join(lines) + "\n"
