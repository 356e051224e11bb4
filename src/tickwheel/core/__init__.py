"""The pure scheduling core.

No Kafka, no ClickHouse, no clock reads, no global random generator: time and randomness
are arguments, and functions return decisions for the services to carry out.
The import rule is enforced by import-linter (see pyproject.toml).

All instants are int epoch milliseconds UTC. Modules, one noun each:

* `schedule` — parse/validate (`parse_schedule`), compile and share (`compile_schedule`),
  occurrences through the DST policy (docs/decisions/0010, 0011); built on `cron`
  (grammar), `wallclock` (matching), `zones` (IANA zones and their offset timelines).
* `horizon` — a window of occurrences for many jobs at once.
* `identity` (`execution_id`), `jitter`, `misfire` (`walk_forward`), `overlap`, `period`
  (payload templates), `retry` (backoff decisions), `wheel` (`TimingWheel`), `preview`.
* `definition` — the one validator of job definitions, for the JSON form and the stored
  record (docs/decisions/0052); `targets` — which addresses an `http` job may reach.
"""
