"""What commands print: aligned tables for people, JSON for scripts."""

from __future__ import annotations

import json
from typing import Any, Sequence


MIN_WRAPPED = 24
"""The narrowest a wrapped column gets (`format_table`): below this, lines run over instead."""


def format_table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None, indent: int = 0,
                 width: int | None = None) -> str:
    """Rows as aligned columns: numbers right-aligned, everything else left-aligned.

    With a `width` (`terminal_width`), a table wider than that narrows its
    first column (names, never cut): a first cell that does not fit has the
    line to itself, and the rest of its row follows on the next line under
    the other columns.  Only a row whose other cells are themselves too
    wide runs over."""
    table = [list(header)] if header else []
    table += [list(row) for row in rows]
    if not table:
        return ""
    ncols = max(len(row) for row in table)
    numeric = [
        all(isinstance(row[i], (int, float)) and not isinstance(row[i], bool) for row in rows if i < len(row))
        and any(i < len(row) for row in rows)
        for i in range(ncols)
    ]
    cells = [[_cell(v) for v in row] + [""] * (ncols - len(row)) for row in table]
    widths = [max(len(row[i]) for row in cells) for i in range(ncols)]
    over = indent + sum(widths) + 2 * (ncols - 1) - width if width is not None and ncols > 1 else 0
    if over > 0 and widths[0] > MIN_WRAPPED:
        fit = max(MIN_WRAPPED, widths[0] - over)
        widths[0] = max(len(row[0]) if len(row[0]) <= fit else 0 for row in cells)
    lines = []
    for row in cells:
        if len(row[0]) > widths[0]:
            lines.append(" " * indent + row[0])
            row = ["", *row[1:]]
        parts = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append((" " * indent + "  ".join(parts)).rstrip())
    return "\n".join(lines)


def terminal_width() -> int:
    """The columns tables fit in: ``$COLUMNS``, else the terminal's, else 80 (output to a pipe or file)."""
    import shutil

    return shutil.get_terminal_size((80, 24)).columns


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def print_text(text: str) -> None:
    """`text` as a line (or lines); nothing at all when it is empty."""
    if text:
        print(text)


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def jsonable(value: Any) -> Any:
    """`value` with arrays as nested lists and bytes as text, for `json.dumps`."""
    import numpy as np

    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return value


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours:02d}h{minutes:02d}m"
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s"
