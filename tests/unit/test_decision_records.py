"""The decision records carry their status, and their index lists them all (issue 32).

Each record opens with `# NNNN — title`, a blank line and `Status: accepted`, `Status: amended
by NNNN` or `Status: superseded by NNNN`; a later record that amends or supersedes it exists.
`docs/decisions/README.md`, written by `docs/decisions/index.py`, lists every record: a record
added without running the script fails here (and `make lint` runs the script's `--check`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

FOLDER = Path(__file__).resolve().parents[2] / "docs" / "decisions"


def load_index() -> ModuleType:
    spec = importlib.util.spec_from_file_location("decision_index", FOLDER / "index.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


index = load_index()
RECORDS = [p.name for p in index.record_files(FOLDER)]


def test_the_records_are_found() -> None:
    assert len(RECORDS) >= 150, RECORDS
    strays = [p.name for p in FOLDER.glob("*.md") if p.name != "README.md"]
    assert sorted(strays) == RECORDS, "a record's file is named NNNN-slug.md"


@pytest.mark.parametrize("name", RECORDS)
def test_record_opens_with_its_title_and_status(name: str) -> None:
    record = index.read_record(FOLDER / name)
    assert record.number == name[:4]


def test_every_amending_or_superseding_record_exists_and_is_later() -> None:
    _, problems = index.read_records(FOLDER)
    assert problems == []


def test_readme_lists_every_record() -> None:
    readme = (FOLDER / "README.md").read_text(encoding="utf-8")
    missing = [name for name in RECORDS if f"]({name}) |" not in readme]
    assert missing == [], "run python docs/decisions/index.py"


@pytest.mark.parametrize(
    ("line", "status", "later"),
    [
        ("Status: accepted", "accepted", ()),
        ("Status: accepted (amends decision 0050's probe)", "accepted", ()),
        ("Status: amended by 0121, 0128", "amended by 0121, 0128", ("0121", "0128")),
        ("Status: superseded by 0178", "superseded by 0178", ("0178",)),
    ],
)
def test_status_lines_read(tmp_path: Path, line: str, status: str, later: tuple[str, ...]) -> None:
    path = tmp_path / "0100-a-record.md"
    path.write_text(f"# 0100 — A record\n\n{line}\n\n## Context\n", encoding="utf-8")
    record = index.read_record(path)
    assert (record.status, record.later, record.title) == (status, later, "A record")


@pytest.mark.parametrize(
    "text",
    [
        "# 0100 — A record\n\n## Context\n",  # no status
        "# 0100 — A record\nStatus: accepted\n",  # no blank line
        "# 0100 — A record\n\n**Status**: accepted\n",
        "# 0100 — A record\n\nStatus: amended\n",
        "# 0101 — A record\n\nStatus: accepted\n",  # the title's number is not the file's
    ],
)
def test_a_malformed_record_is_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "0100-a-record.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(index.RecordError, match=r"0100-a-record\.md"):
        index.read_record(path)


def test_an_amendment_the_older_record_does_not_name_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "0100-old.md").write_text("# 0100 — Old\n\nStatus: accepted\n", encoding="utf-8")
    (tmp_path / "0101-new.md").write_text(
        "# 0101 — New (amends 0100)\n\nStatus: accepted\n", encoding="utf-8"
    )
    _, problems = index.read_records(tmp_path)
    assert problems == [
        "0100-old.md: 0101-new.md amends or supersedes it, but its status does not name 0101"
    ]
    (tmp_path / "0100-old.md").write_text(
        "# 0100 — Old\n\nStatus: amended by 0101\n", encoding="utf-8"
    )
    assert index.read_records(tmp_path)[1] == []


def test_a_banner_the_status_line_does_not_carry_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "0100-old.md").write_text(
        "# 0100 — Old\n\nStatus: accepted\n\n*Superseded in part by 0101*: ...\n",
        encoding="utf-8",
    )
    (tmp_path / "0101-new.md").write_text("# 0101 — New\n\nStatus: accepted\n", encoding="utf-8")
    _, problems = index.read_records(tmp_path)
    assert problems == [
        "0100-old.md: its text says 0101 amended or superseded it; its status line does not"
    ]


def test_a_status_naming_a_missing_or_earlier_record_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "0100-a.md").write_text(
        "# 0100 — A\n\nStatus: superseded by 0102\n", encoding="utf-8"
    )
    (tmp_path / "0101-b.md").write_text("# 0101 — B\n\nStatus: amended by 0100\n", encoding="utf-8")
    _, problems = index.read_records(tmp_path)
    assert problems == [
        "0100-a.md: superseded by 0102, but there is no record 0102",
        "0101-b.md: amended by 0100 names an earlier record",
    ]
