"""The suite never depends on another test's process state (issue: a test failing one run in ten).

Dagster keeps the defs-state storage of the instance last entered in a process-wide context
variable; an instance left entered and then disposed made the next `Definitions` load of the
worker fail with "undefined DagsterInstance weakref". The root conftest's hook wrappers run every
phase without one. Checked here by an inner pytest session: a test that leaves a disposed
instance's storage behind, then a test that loads definitions.
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

LEAVES_A_DISPOSED_STORAGE = """
import gc

import dagster as dg
from dagster._core.storage.defs_state.base import set_defs_state_storage


LEFT_ENTERED = []


def test_leaves_a_disposed_instance_storage_behind():
    with dg.instance_for_test() as instance:
        storage = instance.defs_state_storage
    entered = set_defs_state_storage(storage)
    entered.__enter__()  # and never exited, as an instance entered by an unclosed context
    LEFT_ENTERED.append(entered)
    del instance
    gc.collect()


def test_then_loads_definitions():
    @dg.op
    def noop():
        return None

    @dg.job
    def only_job():
        noop()

    assert dg.Definitions(jobs=[only_job]).get_job_def("only_job").name == "only_job"
"""

ISOLATING_CONFTEST = """
from timeline_pipeline_tests.conftest import (
    pytest_runtest_call,
    pytest_runtest_setup,
    pytest_runtest_teardown,
)
"""


def _run(pytester: pytest.Pytester, conftest: str) -> pytest.RunResult:
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_order=LEAVES_A_DISPOSED_STORAGE)
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-q")


def test_a_disposed_instance_left_by_one_test_does_not_fail_the_next(
    pytester: pytest.Pytester,
) -> None:
    _run(pytester, ISOLATING_CONFTEST).assert_outcomes(passed=2)


def test_without_the_isolation_the_next_definitions_load_fails(pytester: pytest.Pytester) -> None:
    """The control: the inner session reproduces the failure the hooks prevent."""
    result = _run(pytester, "")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*undefined DagsterInstance weakref*"])
