"""Hypothesis settings shared by the core's property tests.

`TICKWHEEL_PROPERTY_EXAMPLES` raises the example count for a deeper, slower run, e.g.
`TICKWHEEL_PROPERTY_EXAMPLES=3000 pytest tests/unit/core`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

EXAMPLES = int(os.environ.get("TICKWHEEL_PROPERTY_EXAMPLES", "150"))
PROPS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
