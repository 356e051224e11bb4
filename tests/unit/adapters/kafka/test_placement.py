"""Where a key of the jobs co-partition group lives, before and after the count grows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tickwheel.adapters.kafka.partitioner import partition_for
from tickwheel.adapters.kafka.placement import (
    canonical_key,
    is_partition_record,
    owner_partition,
    step_key,
    step_workflow,
)

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=24)


@given(ids, st.integers(1, 64))
def test_a_job_is_owned_by_the_partition_its_key_hashes_to(job_id: str, partitions: int) -> None:
    assert owner_partition(job_id, partitions) == partition_for(job_id, partitions)
    assert canonical_key(job_id, partitions) == job_id


@given(ids, st.integers(1, 24), st.integers(1, 24))
def test_a_step_key_placed_by_an_old_count_is_owned_by_its_workflows_partition_under_the_new(
    workflow_id: str, old: int, new: int
) -> None:
    key = step_key(workflow_id, old)
    assert step_workflow(key) == workflow_id
    assert owner_partition(key, new) == partition_for(workflow_id, new)
    renamed = canonical_key(key, new)
    assert renamed == step_key(workflow_id, new)
    assert partition_for(renamed, new) == partition_for(workflow_id, new)


def test_a_workflow_id_with_slashes_is_read_back_whole() -> None:
    key = step_key("orders/2026/12", 12)
    assert step_workflow(key) == "orders/2026/12"


def test_only_reserved_prefixes_name_a_step_or_a_partition_record() -> None:
    assert step_workflow("nightly") is None
    assert step_workflow(None) is None
    assert is_partition_record("__partition__/3")
    assert not is_partition_record("__wf/x/1")
    assert not is_partition_record(None)
