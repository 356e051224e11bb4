"""Versioned ClickHouse migrations: `topology/clickhouse/migrations/NNNN_name.sql`.

Files apply in version order; each applied one is recorded in `schema_migrations` with a
checksum of its text, so a second run applies nothing and an edited, already-applied file is
reported instead of silently diverging. Retention is a parameter: a file writes
`{{ retention_days.<table> }}` and the runner substitutes the configured number of days.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from tickwheel.adapters.clickhouse._sql import SqlLexError, split_statements
from tickwheel.ports.history import MigrationError

#: Retention per table in days, used where settings do not say otherwise.
DEFAULT_RETENTION_DAYS: Mapping[str, int] = MappingProxyType(
    {
        "execution_events": 400,
        "job_definitions": 1825,
        "calendar_events": 1825,
        "workflow_events": 400,
        "alerts": 400,
        "dead_letters": 400,
    }
)

#: Bounds on a retention value: at least a day, and within what `toDateTime` can represent.
MIN_RETENTION_DAYS = 1
MAX_RETENTION_DAYS = 36_500

_FILE_NAME = re.compile(r"^(?P<version>\d{4})_(?P<name>[a-z0-9_]+)\.sql$")
_PLACEHOLDER = re.compile(r"\{\{\s*(?P<key>[^{}]*?)\s*\}\}")
_RETENTION_KEY = re.compile(r"^retention_days\.(?P<table>[a-z_][a-z0-9_]*)$")


@dataclass(frozen=True)
class Migration:
    """One migration file: `version` from its `NNNN_` prefix, `name` its file stem."""

    version: int
    name: str
    text: str

    @property
    def checksum(self) -> str:
        """sha256 of the file as written (before substitution), so changing a retention
        setting is not mistaken for an edited migration."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def statements(self, retention_days: Mapping[str, int]) -> list[str]:
        """The migration's statements with its placeholders substituted."""
        try:
            return split_statements(render(self.text, retention_days, source=self.name))
        except SqlLexError as exc:
            raise MigrationError(f"migration {self.name}: {exc}") from None


def default_topology_dir() -> Path:
    """`topology/clickhouse` of the checkout this package runs from."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "topology" / "clickhouse"
        if (candidate / "migrations").is_dir():
            return candidate
    raise MigrationError(
        f"cannot find topology/clickhouse/migrations above {here}; pass migrations_dir "
        "to the history store"
    )


def validate_retention(retention_days: Mapping[str, int]) -> dict[str, int]:
    """Defaults overlaid with `retention_days`, each checked to be a whole number of days."""
    merged = dict(DEFAULT_RETENTION_DAYS)
    for table, days in retention_days.items():
        if isinstance(days, bool) or not isinstance(days, int):
            raise MigrationError(f"retention for {table} must be a whole number of days")
        if not MIN_RETENTION_DAYS <= days <= MAX_RETENTION_DAYS:
            raise MigrationError(
                f"retention for {table} is {days} days; accepted: "
                f"{MIN_RETENTION_DAYS}..{MAX_RETENTION_DAYS}"
            )
        merged[table] = days
    return merged


def render(text: str, retention_days: Mapping[str, int], *, source: str = "sql") -> str:
    """Substitute `{{ retention_days.<table> }}`; any other placeholder is an error."""

    def substitute(match: re.Match[str]) -> str:
        key = match.group("key")
        retention = _RETENTION_KEY.match(key)
        if retention is None:
            raise MigrationError(
                f"{source}: unknown placeholder {{{{ {key} }}}}; accepted: "
                "{{ retention_days.<table> }}"
            )
        table = retention.group("table")
        if table not in retention_days:
            raise MigrationError(
                f"{source}: no retention configured for table {table!r}; known: "
                + ", ".join(sorted(retention_days))
            )
        # An int by construction (validate_retention), so it cannot inject SQL.
        return str(int(retention_days[table]))

    return _PLACEHOLDER.sub(substitute, text)


def load_migrations(migrations_dir: Path) -> list[Migration]:
    """Every `NNNN_name.sql` in `migrations_dir`, in version order."""
    if not migrations_dir.is_dir():
        raise MigrationError(f"migrations directory {migrations_dir} does not exist")
    migrations: dict[int, Migration] = {}
    for path in sorted(migrations_dir.iterdir()):
        if path.suffix != ".sql":
            continue
        match = _FILE_NAME.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_lowercase_name.sql")
        version = int(match.group("version"))
        if version in migrations:
            raise MigrationError(
                f"{path.name}: version {version:04d} is also {migrations[version].name}"
            )
        migrations[version] = Migration(version, path.stem, path.read_text(encoding="utf-8"))
    return [migrations[v] for v in sorted(migrations)]


def pending(migrations: list[Migration], applied: Mapping[int, tuple[str, str]]) -> list[Migration]:
    """The migrations not yet applied; `applied` maps version to (name, checksum).

    Versions recorded but absent from the files are allowed (a newer release applied them;
    migrations only add), but a recorded version whose file changed is an error.
    """
    result: list[Migration] = []
    for migration in migrations:
        recorded = applied.get(migration.version)
        if recorded is None:
            result.append(migration)
            continue
        name, checksum = recorded
        if checksum != migration.checksum:
            raise MigrationError(
                f"migration {migration.name} was changed after it was applied (recorded as "
                f"{name}); migrations are append-only: revert the edit and add a new "
                "NNNN_name.sql instead"
            )
    return result
