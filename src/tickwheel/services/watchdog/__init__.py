"""The watchdog service: notices what did not happen (docs/watchdog.md, decision 0056)."""
