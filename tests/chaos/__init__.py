"""Fault tests: real service processes SIGKILLed and SIGSTOPped, invariants checked from the
recorded history (marker `chaos`). Their harnesses live beside the integration tests they share
(`tests/integration/timer_harness.py`, `workflow_harness.py`, `history_scenario.py`,
`history_sink_running.py`, `history_cli.py`)."""
