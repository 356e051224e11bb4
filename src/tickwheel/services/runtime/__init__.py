"""What the partitioned, exactly-once services (the timer, the orchestrator and the job writer)
share: one mechanism each, in one place (issue 32)."""
