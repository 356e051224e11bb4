"""The single writer of job definitions: judges the creates, updates and deletes on
`jobs.commands`, per partition, and writes each accepted change with its verdict in one
transaction (docs/decisions/0099, 0126)."""
