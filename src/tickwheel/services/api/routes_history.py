"""`POST /history/sql`: one read-only SQL statement over the history, for operators.

Only an `admin` key of the tenant `default` (the operators') may use it: the history holds
every tenant's rows, so a tenant's own admin would read the others'. The statement goes through
the history reader's guard (decision 0032: one read-only statement, no table functions) with its
caps (decision 0051: rows, bytes, time); a refused or capped statement is a 422 naming why.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Request
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from tickwheel.ports.history import HistoryQueryError, HistoryQueryRejected
from tickwheel.services.api.keys import DEFAULT_TENANT
from tickwheel.services.api.models import _Strict
from tickwheel.services.api.problems import Problem, problem_responses
from tickwheel.services.api.routes_jobs import BackendDep

router = APIRouter(tags=["history"])


class SqlBody(_Strict):
    sql: str = Field(min_length=1, max_length=20_000)
    params: dict[str, str | int | float | bool] | None = None


EXAMPLE = {
    "columns": ["outcome", "executions"],
    "types": ["String", "UInt64"],
    "rows": [["succeeded", 1204], ["failed", 3]],
}


def _run(b: Any, body: SqlBody) -> dict[str, Any]:
    reader = b.open_history()
    try:
        result = reader.query(body.sql, body.params)
    finally:
        reader.close()
    rows = json.loads(json.dumps([list(row) for row in result.rows], default=str))
    return {"columns": list(result.columns), "types": list(result.types), "rows": rows}


@router.post(
    "/history/sql",
    summary="One read-only SQL statement over the history (operators' admin keys only)",
    responses={
        200: {
            "description": "The answer",
            "content": {
                "application/json": {
                    "schema": {"type": "object", "additionalProperties": True},
                    "example": EXAMPLE,
                }
            },
        },
        **problem_responses(403, 422, 503),
    },
)
async def history_sql(
    request: Request,
    b: BackendDep,
    body: Annotated[
        SqlBody,
        Body(
            openapi_examples={
                "outcomes": {
                    "value": {
                        "sql": "SELECT outcome, count() AS executions FROM execution_outcomes GROUP BY outcome"
                    }
                }
            }
        ),
    ],
) -> dict[str, Any]:
    principal = request.state.principal
    if principal.tenant_id != DEFAULT_TENANT:
        raise Problem(
            403,
            "forbidden",
            "history sql reads every tenant's rows; accepted: an "
            f"admin key of the tenant {DEFAULT_TENANT!r} (the operators')",
        )
    try:
        return await run_in_threadpool(_run, b, body)
    except (HistoryQueryRejected, HistoryQueryError) as exc:
        raise Problem(
            422, "query-refused", str(exc), errors=[{"pointer": "/sql", "detail": str(exc)}]
        ) from None
