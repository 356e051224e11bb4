"""The timer's `TimerState` writer: the generated codec (`adapters/avro/fast/timer_state.py`,
decision 0214) with the timer's own part, the pending requests.

A pending execution's entry carries its current attempt's `ExecutionRequest` as the very
bytes written to its `executions.<priority>` topic (decision 0008): a request this writer's
transaction already encoded is taken out of its cache (`encoded`), any other is encoded here
(decision 0116). The bytes are identical to `records.encode_state(state, encoded, seq)`,
which writes, or refuses, what the generated path does not take
(`tests/unit/services/timer/test_timer_codec.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any

from tickwheel.adapters.avro.fast import timer_state
from tickwheel.adapters.avro.fast.execution_request import encode as encode_request
from tickwheel.services.timer.records import RequestKey, encode_state, request_key

# What the generated path may meet in a state it then hands to the generic encoder instead.
_UNWRITABLE = (TypeError, AttributeError, KeyError, ValueError, OverflowError)


def encode_timer_state(
    state: dict[str, Any], encoded: MutableMapping[RequestKey, bytes], seq: int
) -> bytes:
    """What `records.encode_state(state, encoded, seq)` returns, with the same effect on
    `encoded` (a pending request already encoded for its topic is taken out of it)."""
    if timer_state.fast_layout():

        def embed(request: Mapping[str, Any]) -> bytes:
            cached = encoded.pop(request_key(request), None)
            return encode_request(request) if cached is None else cached

        try:
            return timer_state.write(state, seq, embed)
        except _UNWRITABLE:
            pass  # the generic path writes it or says why it cannot
    return encode_state(state, encoded, seq)
