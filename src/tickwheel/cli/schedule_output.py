"""How `tickwheel schedule preview` prints occurrences as a table, for a schedule given by its
flags (`tickwheel.cli.schedule`) or a stored job's (`tickwheel.cli.schedule_job`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tickwheel.core.preview import PreviewRow


def print_preview_table(rows: list[PreviewRow], zone: str) -> None:
    """The preview as a table: UTC, local time with its abbreviation, and the note."""
    print(f"{'UTC':<25} {'local (' + zone + ')':<32} note")
    for row in rows:
        local = f"{row.local} {row.abbreviation}"
        print(f"{row.utc:<25} {local:<32} {row.note or ''}".rstrip())
