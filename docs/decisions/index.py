"""The index of the decision records, `docs/decisions/README.md`, made from the records.

    python docs/decisions/index.py           # write README.md
    python docs/decisions/index.py --check   # exit 1 if README.md is stale or a record is
                                             # malformed (`make lint` runs this)

Every record is `NNNN-slug.md` and opens with its title line `# NNNN — title`, a blank line,
then its status line: `Status: accepted`, `Status: amended by NNNN` (several: `NNNN, NNNN`)
or `Status: superseded by NNNN`, optionally followed by a remark in parentheses. A record
amended or superseded names the later record that does so, and that record exists; a record
whose title or status says it `amends NNNN` or `supersedes NNNN` is named by NNNN's status,
and so is a later record that NNNN's own text says it was amended or superseded by.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE / "README.md"
FILE_NAME = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
TITLE = re.compile(r"^# (\d{4}) — (.+)$")
STATUS = re.compile(
    r"^Status: (?P<status>accepted|amended by (?P<amended>\d{4}(?:, \d{4})*)"
    r"|superseded by (?P<superseded>\d{4}))(?: \((?P<remark>.+)\))?$"
)
# "amends 0066" in a title or a status line: the record it names must say so in its status.
AMENDS = re.compile(r"\b(?:amends|supersedes) (?:decisions? )?(\d{4})", re.IGNORECASE)
# "Amended by 0102 and 0103" in a record's text: its status must name them too.
AMENDED_BY = re.compile(
    r"\b(?:amended|superseded)(?: in part)? by (?:decisions? )?"
    r"((?:\[?\d{4}\]?(?:\([^)\s]*\))?(?:, | and )?)+)",
    re.IGNORECASE,
)


class RecordError(ValueError):
    """A decision record that does not open as every record must."""


@dataclass(frozen=True)
class Record:
    number: str
    title: str
    status: str
    later: tuple[str, ...]  # the records that amend or supersede this one
    file: str
    amends: tuple[str, ...] = ()  # what its title or status says it amends or supersedes
    named_later: tuple[str, ...] = ()  # what its text says amended or superseded it


def record_files(folder: Path = HERE) -> list[Path]:
    """Every decision record in `folder` (`NNNN-*.md`), in order of number."""
    return sorted(p for p in folder.glob("[0-9][0-9][0-9][0-9]-*.md"))


def read_record(path: Path) -> Record:
    """The record's number, title and status, from its first three lines."""
    if not FILE_NAME.match(path.name):
        raise RecordError(f"{path.name}: a record's file is named NNNN-lower-case-slug.md")
    lines = [*path.read_text(encoding="utf-8").split("\n"), "", "", ""][:3]
    title = TITLE.match(lines[0])
    if title is None or title.group(1) != path.name[:4]:
        raise RecordError(f"{path.name}: the first line must be '# {path.name[:4]} — title'")
    status = STATUS.match(lines[2])
    if lines[1] != "" or status is None:
        raise RecordError(
            f"{path.name}: the title line, a blank line, then 'Status: accepted', "
            f"'Status: amended by NNNN[, NNNN]' or 'Status: superseded by NNNN'; "
            f"found {lines[2]!r}"
        )
    later = status.group("amended") or status.group("superseded") or ""
    body = path.read_text(encoding="utf-8").split("\n", 3)[-1]
    return Record(
        number=path.name[:4],
        title=title.group(2),
        status=status.group("status"),
        later=tuple(later.split(", ")) if later else (),
        file=path.name,
        amends=tuple(AMENDS.findall(f"{lines[0]} {lines[2]}")),
        named_later=tuple(
            sorted({n for m in AMENDED_BY.finditer(body) for n in re.findall(r"\d{4}", m[1])})
        ),
    )


def read_records(folder: Path = HERE) -> tuple[list[Record], list[str]]:
    """The records that read, and what is wrong with the others (and with their links)."""
    records, problems = [], []
    for path in record_files(folder):
        try:
            records.append(read_record(path))
        except RecordError as error:
            problems.append(str(error))
    by_number = {r.number: r for r in records}
    numbers = set(by_number)
    for record in records:
        for earlier in record.amends:
            if earlier in by_number and record.number not in by_number[earlier].later:
                problems.append(
                    f"{by_number[earlier].file}: {record.file} amends or supersedes it, "
                    f"but its status does not name {record.number}"
                )
        for later in record.named_later:
            if later not in record.later:
                problems.append(
                    f"{record.file}: its text says {later} amended or superseded it; "
                    f"its status line does not"
                )
        for later in record.later:
            if later not in numbers:
                problems.append(f"{record.file}: {record.status}, but there is no record {later}")
            elif later <= record.number:
                problems.append(f"{record.file}: {record.status} names an earlier record")
    if len(numbers) != len(records):
        problems.append("two records share a number")
    return records, problems


def render(records: list[Record]) -> str:
    """README.md: every record with its number, title and status, in order of number."""
    by_number = {r.number: r for r in records}
    counts = {
        kind: sum(r.status.startswith(kind) for r in records)
        for kind in ("accepted", "amended", "superseded")
    }
    lines = [
        "# Decision records",
        "",
        "One record per choice that is hard to reverse. A record is not edited once made, but "
        "for its status line: `accepted`, `amended by NNNN` (a later record refines it: read "
        "both) or `superseded by NNNN` (a later record replaced its mechanism: read that one).",
        "",
        "A new record: the next free number, `NNNN-slug.md`, opening with `# NNNN — title`, a "
        "blank line and `Status: accepted`; mark the records it amends or supersedes; then run "
        "`python docs/decisions/index.py` to rewrite this index (`--check`, in `make lint`, "
        "fails on a stale index or a malformed record).",
        "",
        f"{len(records)} records: {counts['accepted']} accepted, {counts['amended']} amended, "
        f"{counts['superseded']} superseded.",
        "",
        "<!-- Generated by docs/decisions/index.py from the records: do not edit by hand. -->",
        "",
        "| No. | Decision | Status |",
        "|---|---|---|",
    ]
    for record in records:
        status = record.status
        for later in record.later:
            if later in by_number:
                status = status.replace(later, f"[{later}]({by_number[later].file})")
        title = record.title.replace("|", "\\|")
        lines.append(f"| {record.number} | [{title}]({record.file}) | {status} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if README.md is stale")
    args = parser.parse_args(argv)
    records, problems = read_records()
    for problem in problems:
        print(f"docs/decisions/{problem}", file=sys.stderr)
    text = render(records)
    if args.check:
        current = README.read_text(encoding="utf-8") if README.exists() else ""
        if current != text:
            print(
                "docs/decisions/README.md is stale: run python docs/decisions/index.py",
                file=sys.stderr,
            )
            return 1
        return 1 if problems else 0
    README.write_text(text, encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
