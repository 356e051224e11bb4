"""The timer service: owns time for its partitions and emits occurrences exactly once."""
