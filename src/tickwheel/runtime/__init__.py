"""What every service process runs on: a bounded stop (`shutdown`), and for the partitioned,
exactly-once services (timer, orchestrator, job writer) the lifecycle of an owned partition —
assigned, restored on a thread, served, dropped and restored again after a failed or fenced
transaction (`partitions`, `restores`, `transactions`). No service imports another; what they
share lives here."""
