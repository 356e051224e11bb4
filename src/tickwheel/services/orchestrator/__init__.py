"""The workflow orchestrator: folds each instance's inputs into events, snapshots and commands,
all of a batch in one transaction per partition (docs/decisions/0059, 0061)."""
