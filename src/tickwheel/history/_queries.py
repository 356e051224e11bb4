"""The documented queries: `.sql` files under `topology/clickhouse/queries/`, loaded by name.

A file starts with a comment header: `-- <name>: <title>`, a description, and one
`-- @param <name>  <description>` line per `{name:Type}` placeholder. The analyst queries sit
at the top of the folder (docs/queries.md shows each with example output); `internal/` holds
the ones the timeline and the audit read. Every one is a plain read-only statement, so it also
runs unchanged through `tickwheel history sql "$(cat FILE)" --param name=value`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tickwheel.errors import InvalidInput, TickwheelError
from tickwheel.history._reader import HistoryReader
from tickwheel.paths import project_root
from tickwheel.ports.history import QueryResult

_HEADER = re.compile(r"^--\s*(?P<name>[a-z0-9_]+):\s*(?P<title>.+)$")
_PARAM_DOC = re.compile(r"^--\s*@param\s+(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s+(?P<doc>.+)$")
_PLACEHOLDER = re.compile(r"\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):(?P<type>[^{}]+)\}")


class UnknownQuery(TickwheelError, LookupError):
    """No documented query has that name."""

    def __init__(self, name: str, known: list[str]) -> None:
        super().__init__(f"no documented query {name!r}; known: {', '.join(known)}")
        self.name = name


@dataclass(frozen=True)
class NamedQuery:
    """One documented query: its SQL, what it answers, and the parameters it binds."""

    name: str
    title: str
    description: str
    sql: str
    params: Mapping[str, str]  # name -> ClickHouse type
    param_docs: Mapping[str, str]
    path: Path

    def check_params(self, params: Mapping[str, Any]) -> None:
        """Raise `InvalidInput` naming a missing or unknown parameter."""
        missing = [name for name in self.params if name not in params]
        if missing:
            raise InvalidInput(
                missing[0],
                f"query {self.name} needs --param {missing[0]}=... "
                f"({self.param_docs.get(missing[0], self.params[missing[0]])})",
            )
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            raise InvalidInput(
                unknown[0],
                f"query {self.name} takes no parameter {unknown[0]!r}; it takes "
                + (", ".join(self.params) or "none"),
            )


def queries_dir() -> Path:
    """`topology/clickhouse/queries` of the project."""
    return project_root() / "topology" / "clickhouse" / "queries"


def parse_query_file(path: Path) -> NamedQuery:
    """Read one `.sql` file with its header."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    header = _HEADER.match(lines[0].strip()) if lines else None
    if header is None or header.group("name") != path.stem:
        raise InvalidInput(
            str(path), f"a query file starts with '-- {path.stem}: <what it answers>'"
        )
    description: list[str] = []
    docs: dict[str, str] = {}
    for line in lines[1:]:
        stripped = line.strip()
        if not stripped.startswith("--"):
            break
        param = _PARAM_DOC.match(stripped)
        if param is not None:
            docs[param.group("name")] = param.group("doc").strip()
        else:
            description.append(stripped[2:].strip())
    params: dict[str, str] = {}
    for match in _PLACEHOLDER.finditer(text):
        params.setdefault(match.group("name"), match.group("type").strip())
    return NamedQuery(
        name=path.stem,
        title=header.group("title").strip(),
        description="\n".join(description).strip(),
        sql=text,
        params=params,
        param_docs=docs,
        path=path,
    )


def analyst_queries(directory: Path | None = None) -> dict[str, NamedQuery]:
    """The documented analyst queries, by name, in name order."""
    folder = directory or queries_dir()
    return {path.stem: parse_query_file(path) for path in sorted(folder.glob("*.sql"))}


def load_query(name: str, directory: Path | None = None) -> NamedQuery:
    """An analyst query, or an internal one (`internal/<name>.sql`), by name."""
    folder = directory or queries_dir()
    for candidate in (folder / f"{name}.sql", folder / "internal" / f"{name}.sql"):
        if candidate.is_file():
            return parse_query_file(candidate)
    raise UnknownQuery(name, sorted(analyst_queries(folder)))


def run_query(
    reader: HistoryReader, name: str, params: Mapping[str, Any] | None = None
) -> QueryResult:
    """Run a documented query by name on a store or an owner client."""
    query = load_query(name)
    bound = dict(params or {})
    query.check_params(bound)
    return reader.query(query.sql, bound)
