"""What commands print: aligned tables for people, JSON for scripts."""

from __future__ import annotations

import json
from typing import Any, Sequence


def format_table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None, indent: int = 0) -> str:
    """Rows as aligned columns: numbers right-aligned, everything else left-aligned."""
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
    lines = []
    for row in cells:
        parts = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append((" " * indent + "  ".join(parts)).rstrip())
    return "\n".join(lines)


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
