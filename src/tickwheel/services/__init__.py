"""The deployable services, one subpackage each (timer, worker, history, ...): wiring and loop.

Each runs as `python -m tickwheel.services.<name>`; `tickwheel stack up` starts the ones that
exist. Their deployment files (the broker's Maven file, container recipes) live under the
repository's top-level `services/` folder.
"""
