"""The timer's scheduling decisions, pure (decision 0090): one partition's scheduler
(`partition.PartitionScheduler`: catch-up, the end of a restore, a due entry's path to a
request, commands) and what it is built from — jobs (`jobs`), the wheel, parked slots and
dispatch deadlines (`horizon`), the ready queue (`ready`), executions in flight
(`executions`, `flights`, `step_flights`), restored states (`states`, `request_log`), the
records of an occurrence (`occurrences`), what a command asks (`commands`, `workflow_steps`)
and what a transaction carries (`writes`).

Nothing here reads a clock, draws from a global random generator, logs or touches Kafka: the
service (`tickwheel.services.timer`) feeds it records and `now_ms`, and writes what it returns.
Words are explained in docs/glossary.md ("The timer's own words").
"""
