"""`tickwheel api-keys VERB ...`: issue, list and revoke the HTTP API's keys (decision 0068).

What a key is, and how one is issued, stored and revoked, is the API's
(`tickwheel.services.api.keys`, which the console's admin page calls too); this module parses
the flags and prints.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tickwheel.services.api.keys import SCOPES


def _now_ms() -> int:
    from tickwheel.clock import SystemClock

    return int(SystemClock().now() * 1000)


def _create(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.services.api.keys import check_tenant, create_key

    check_tenant(args.tenant)  # refused input before any broker is asked
    token, record = create_key(
        args.tenant, args.scope, args.description, bootstrap=connect(), now_ms=_now_ms()
    )
    if args.json:
        print(json.dumps({"token": token, **record}, indent=2, sort_keys=True))
    else:
        print(token)
        print(
            f"(key id {record['key_id']}, tenant {record['tenant_id']}, scopes "
            f"{','.join(record['scopes'])}; the token is shown only now)"
        )
    return 0


def _list(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.services.api.keys import list_keys

    keys = list_keys(connect())
    if args.json:
        print(json.dumps(keys, indent=2, sort_keys=True))
        return 0
    print(f"{'KEY ID':<17} {'TENANT':<20} {'SCOPES':<24} {'STATE':<8} DESCRIPTION")
    for r in keys:
        state = "revoked" if r["revoked_at"] else "active"
        print(
            f"{r['key_id']:<17} {r['tenant_id']:<20} {','.join(r['scopes']):<24} {state:<8} "
            f"{r.get('description') or ''}"
        )
    return 0


def _revoke(args: argparse.Namespace) -> int:
    from tickwheel.cli._kafka import connect
    from tickwheel.services.api.keys import revoke_key

    record = revoke_key(args.key_id, bootstrap=connect(), now_ms=_now_ms())
    print(json.dumps(record, indent=2, sort_keys=True) if args.json else f"revoked {args.key_id}")
    return 0


def register(subparsers: Any) -> None:
    """Add the `api-keys` command group (`create`, `list`, `revoke`) to the top-level parser's
    subparsers."""
    parser = subparsers.add_parser(
        "api-keys",
        help="HTTP API keys: create, list, revoke",
        description="Issue, list and revoke HTTP API keys, stored hashed in the api.keys topic. "
        "KAFKA_BOOTSTRAP_SERVERS names the cluster, TICKWHEEL_TOPIC_PREFIX the topic prefix.",
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    create = verbs.add_parser("create", help="issue a key; prints the token once")
    create.add_argument("--tenant", required=True, help="the tenant the key acts for")
    create.add_argument(
        "--scope",
        action="append",
        required=True,
        choices=SCOPES,
        help="a scope to grant (repeat for several)",
    )
    create.add_argument("--description", help="what the key is for")
    create.add_argument("--json", action="store_true", help="print JSON")
    create.set_defaults(handler=_create)
    listing = verbs.add_parser("list", help="every key (never a secret)")
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.set_defaults(handler=_list)
    revoke = verbs.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", metavar="KEY_ID")
    revoke.add_argument("--json", action="store_true", help="print JSON")
    revoke.set_defaults(handler=_revoke)
