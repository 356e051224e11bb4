"""The pure scheduling core.

No Kafka, no ClickHouse, no clock reads, no global random generator: time and randomness
are arguments, and functions return decisions for the services to carry out.
The import rule is enforced by import-linter (see pyproject.toml).
"""
