"""docs/workflows-code.md's example runs as written: its first block is `orders.py`, its second
`test_orders.py`; both are written to a folder, imported, and the tests called."""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "workflows-code.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)


@pytest.fixture
def example(tmp_path: Path) -> Iterator[object]:
    orders, tests = python_blocks()[:2]
    (tmp_path / "orders.py").write_text(orders)
    (tmp_path / "test_orders.py").write_text(tests)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("test_orders")
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("orders", "test_orders"):
            sys.modules.pop(name, None)


def test_the_example_s_tests_pass(example: object, tmp_path: Path) -> None:
    tests = [name for name in dir(example) if name.startswith("test_")]
    assert len(tests) == 3
    for name in tests:
        test = getattr(example, name)
        if test.__code__.co_argcount:
            test(tmp_path)
        else:
            test()


def test_the_example_s_workflow_passes_the_static_check(example: object) -> None:
    orders = sys.modules["orders"]
    assert orders.process_order.__tickwheel_workflow__.name == "process_order"
