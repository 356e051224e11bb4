"""`python -m tickwheel.adapters.avro [check|lock] [--schemas-dir DIR]` for CI and authors.

`check` (the default) runs every schema check and exits 1 on any problem; `lock` records
the fingerprint of each new version in `schemas/fingerprints.json`.
"""

from __future__ import annotations

import argparse
import sys

from tickwheel.adapters.avro._compat import check_schemas, update_lock
from tickwheel.adapters.avro._registry import SCHEMAS_DIR_ENV, SchemaLayoutError, find_schemas_dir


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the process exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m tickwheel.adapters.avro",
        description="Check the Avro schemas (compatibility, fingerprints) or record new versions.",
    )
    parser.add_argument("command", nargs="?", choices=["check", "lock"], default="check")
    parser.add_argument(
        "--schemas-dir", help=f"the schemas folder (env: {SCHEMAS_DIR_ENV}; default: the repo's)"
    )
    args = parser.parse_args(argv)
    try:
        root = args.schemas_dir or find_schemas_dir()
        if args.command == "lock":
            for line in update_lock(root):
                print(f"recorded {line}")
            return 0
        problems = check_schemas(root)
    except SchemaLayoutError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in problems:
        print(f"schema problem: {line}", file=sys.stderr)
    if not problems:
        print(f"schemas OK: {root}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
