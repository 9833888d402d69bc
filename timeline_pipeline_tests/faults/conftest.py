"""The fault suite: real processes are killed, restarted and flooded, and each test reports
what it injected and what it counted.

`fault_report(line)` records one line on the test's report (`user_properties`), which pytest-xdist
carries from the worker to the controller; the root conftest prints every such line in a
"fault suite" section at the end of the run, so the figures appear in CI output with or
without `-s`.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

FAULT_PROPERTY = "fault_report"

# The edit floods' shared verdict asserts in a support module: pytest explains its failures too.
pytest.register_assert_rewrite("timeline_pipeline_tests.faults.support_edits")


@pytest.fixture
def fault_report(record_property: Callable[[str, object], None]) -> Callable[[str], None]:
    """Record a line such as `injected: kill -9 after 180/400 events; counted: 400 rows`."""

    def report(line: str) -> None:
        record_property(FAULT_PROPERTY, line)

    return report
