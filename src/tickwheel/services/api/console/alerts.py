"""Acknowledging an alert from the console: the same `acknowledge` record on
`watchdog.commands` that `tickwheel alerts ack` sends (the watchdog applies it at its next
evaluation, and the incident gets an `acknowledged` transition naming who and the note)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from tickwheel.errors import InvalidInput
from tickwheel.services.api.backend import Backend
from tickwheel.services.api.console.models import require_reason
from tickwheel.services.api.console.render import error_page, one, read_form, see_other

log = logging.getLogger("tickwheel.api.console")
router = APIRouter(include_in_schema=False)
AckSender = Callable[[Backend, str, dict[str, Any]], None]


def send_ack(backend: Backend, incident_id: str, command: dict[str, Any]) -> None:
    """Publish the acknowledgement to `watchdog.commands`, keyed by the incident."""
    from tickwheel.adapters.avro import encode
    from tickwheel.adapters.kafka.producer import EventProducer
    from tickwheel.topology import topic_name

    producer = EventProducer(backend.bootstrap)
    producer.send(topic_name("watchdog.commands"), incident_id, encode("Alert", command))
    producer.flush(10.0)


def acknowledge(request: Request, b: Backend, wanted: str, by: str, note: str) -> str:
    from tickwheel.cli.alerts import UnknownAlert, ack_command, find_incident

    incident: dict[str, Any] = find_incident(request.app.state.console_alerts(b), wanted)
    if incident["state"] != "open":
        raise UnknownAlert(f"incident {incident['incident_id']} is resolved; accepted: an open "
                           "incident")  # fmt: skip
    command = ack_command(incident["incident_id"], by, note, b.now_ms(), str(uuid.uuid4()))
    request.app.state.console_ack(b, incident["incident_id"], command)
    log.info("alert acknowledged", extra={"action": "console_alert_acknowledged",
                                          "incident_id": incident["incident_id"], "by": by})  # fmt: skip
    found: str = incident["incident_id"]
    return found


@router.post("/alerts/{incident_id}/ack")
async def ack_alert(request: Request, incident_id: str) -> Response:
    b: Backend = request.app.state.backend
    form = await read_form(request)
    try:
        note = require_reason(one(form, "note"))
        by = one(form, "by").strip() or "operator"
        if len(by) > 100:
            raise InvalidInput("by", f"{len(by)} characters; accepted: 1-100")
        done = await run_in_threadpool(acknowledge, request, b, incident_id, by, note)
    except Exception as exc:
        return error_page(request, exc, "alerts")
    return see_other("/alerts", f"acknowledgement of {done} sent by {by}; the watchdog "
                     "applies it at its next evaluation")  # fmt: skip
