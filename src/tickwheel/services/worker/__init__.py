"""The worker service: `python -m tickwheel.services.worker --instance NAME [--types ...]
[--concurrency N] [--priority ...] [--module M ...]` (or `tickwheel worker`).

Consumes `executions.high|normal|low` with one consumer and pool per priority, records each
attempt's lease, heartbeats and outcome on `executions.events`, and honours cancellations from
`executions.control`. Handlers come from `tickwheel.jobtypes` and from `@job` in user modules.
"""
