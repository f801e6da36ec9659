"""Log-mode tables sized to the terminal (CLI-016): whole cells on a pipe or with --wide; at a
narrow terminal, IDs and timestamps stay whole while other columns are cut with `…` or left out.
rich is imported only when a table must be narrowed."""

from __future__ import annotations

import re
from typing import Any

from . import terminal_text
from .output import color_enabled, out, stdout, style

# Cells read as a unit: never cut, never wrapped (a column of them may be left out).
_WHOLE_CELL = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)?"  # timestamps
)
_ID_CELL = re.compile(
    r"(?:wait|sig)_[a-z2-7]{26}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)
_FRACTION = re.compile(r"(:\d\d)\.\d+")
_SHORT = 10  # a column never wider than this (a status, a count, `2h05m`) is not cut either
_MIN_CUT = 8  # a column that is cut keeps at least this many cells, `…` included
_GAP = 2
_BREAKS = re.compile(r"[\n\r\t]")  # a cell is one line: a multi-line prompt is shown on one
_TRAILING = re.compile(r"\s+((?:\x1b\[[0-9;]*m)*)$")  # spaces at the end of a line, before any reset


def table(
    rows: list[list[str]], headers: list[str], *, wide: bool = False, drop: tuple[str, ...] = ()
) -> None:
    """Print rows under headers, sized to the terminal.

    On a pipe, and with `wide`, every cell is whole and columns are two spaces apart (a stable
    layout; programs should still read `--json`). On a terminal too narrow for that, IDs and
    timestamps stay whole (never cut or wrapped) and other columns are cut with `…`, widest first;
    if that is not enough, the columns named in `drop` are left out, in that order, and a last line
    says which and that `--wide` shows them."""
    cells = [[" ".join(str(c).split()) if _BREAKS.search(str(c)) else str(c) for c in row] for row in rows]
    cells = [[terminal_text.shown(c) for c in row] for row in cells]  # CLI-030
    stream = stdout()
    if wide or not stream.isatty():
        _plain(cells, headers, [len(h) for h in headers], len)
        return
    import shutil

    from rich.cells import cell_len  # ~25 ms, only at a terminal

    width = shutil.get_terminal_size().columns

    def measured() -> list[int]:
        return [max([cell_len(h)] + [cell_len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    natural = measured()
    if sum(natural) + _GAP * (len(headers) - 1) > width:  # first, times to the second
        cells = [[_FRACTION.sub(r"\1", c) if _WHOLE_CELL.fullmatch(c) else c for c in r] for r in cells]
        natural = measured()
    if sum(natural) + _GAP * (len(headers) - 1) <= width:
        _plain(cells, headers, natural, cell_len)
        return
    ids = [bool(cells) and all(_ID_CELL.fullmatch(r[i]) for r in cells) for i in range(len(headers))]
    whole = [
        ids[i] or natural[i] <= _SHORT or all(_WHOLE_CELL.fullmatch(r[i]) for r in cells if r[i])
        for i in range(len(headers))
    ]
    # What to leave out first: the caller's choice, then any other column from the right, but
    # never the first (what the row is) nor a column of IDs (what the next command needs).
    order = [headers.index(name) for name in drop if name in headers]
    order += [i for i in reversed(range(1, len(headers))) if not ids[i] and i not in order]
    shown = list(range(len(headers)))
    widths = _fit(shown, natural, whole, [cell_len(h) for h in headers], width)
    while widths is None and order:
        shown.remove(order.pop(0))
        widths = _fit(shown, natural, whole, [cell_len(h) for h in headers], width)
    if widths is None:  # the IDs alone are wider than the terminal: whole cells, the terminal wraps
        _plain(cells, headers, natural, cell_len)
        return
    _fitted(cells, headers, shown, widths, width)
    hidden = [headers[i] for i in range(len(headers)) if i not in shown]
    cut = any(widths[i] < natural[i] for i in shown)
    if hidden or cut:
        what = [f"{', '.join(hidden)} hidden"] if hidden else []
        what += ["cells cut with …"] if cut else []
        out(style(f"({' and '.join(what)} to fit {width} columns; --wide shows all)", dim=True))


def _fit(
    shown: list[int], natural: list[int], whole: list[bool], header: list[int], width: int
) -> dict[int, int] | None:
    """Widths for the shown columns within `width`, cutting the widest cuttable column a cell at a
    time (never below _MIN_CUT nor its header); None when that cannot be done."""
    widths = {i: natural[i] for i in shown}
    excess = sum(widths.values()) + _GAP * (len(shown) - 1) - width
    while excess > 0:
        cuttable = [i for i in shown if not whole[i] and widths[i] > max(_MIN_CUT, header[i])]
        if not cuttable:
            return None
        widest = max(cuttable, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
        excess -= 1
    return widths


def _plain(cells: list[list[str]], headers: list[str], natural: list[int], measure: Any) -> None:
    widths = [max([natural[i]] + [measure(r[i]) for r in cells]) for i in range(len(headers))]

    def pad(text: str, shown: str, i: int) -> str:
        return shown + " " * (widths[i] - measure(text))

    gap = " " * _GAP
    out(gap.join(pad(h, style(h, bold=True), i) for i, h in enumerate(headers)).rstrip())
    for row in cells:
        out(gap.join(pad(c, c, i) for i, c in enumerate(row)).rstrip())


def _fitted(
    cells: list[list[str]], headers: list[str], shown: list[int], widths: dict[int, int], width: int
) -> None:
    """The rows through rich's Table with the widths chosen above: cut cells end in `…`."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    colour = color_enabled()
    grid = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 0, 0, _GAP), header_style="")
    for i in shown:
        grid.add_column(
            Text(headers[i], style="bold" if colour else ""),
            width=widths[i],
            no_wrap=True,
            overflow="ellipsis",
        )
    for row in cells:
        grid.add_row(*(Text(row[i]) for i in shown))
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system="standard" if colour else None,
        force_terminal=colour,
        no_color=not colour,
        highlight=False,
        emoji=False,
        markup=False,
    )
    console.print(grid)
    for line in buffer.getvalue().splitlines():
        out(_TRAILING.sub(r"\1", line))
