"""The code location chooses its database and its synthesizer from whether a variable is set,
and leaves reading the value to Dagster (`dg.EnvVar`)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import dagster as dg
import pytest

import timeline_pipeline.definitions as definitions
from timeline_pipeline.settings import DEFAULT_DATABASE_URL


@pytest.fixture
def reload(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    for name in ("TIMELINE_DATABASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    yield monkeypatch
    monkeypatch.undo()
    importlib.reload(definitions)


def loaded() -> ModuleType:
    return importlib.reload(definitions)


def test_without_variables_the_local_database_and_the_rules_are_chosen(
    reload: pytest.MonkeyPatch,
) -> None:
    module = loaded()

    assert not module.PRODUCTION_DATABASE and not module.USE_CLAUDE
    assert module.database.url == DEFAULT_DATABASE_URL
    assert module.synthesizer.api_key is None and module.summarizer.api_key is None


def test_with_variables_set_their_values_are_left_to_dagster(reload: pytest.MonkeyPatch) -> None:
    reload.setenv("TIMELINE_DATABASE_URL", "postgresql+psycopg://db.invalid/secret-name")
    reload.setenv("ANTHROPIC_API_KEY", "sk-not-read-at-import")

    module = loaded()

    assert module.PRODUCTION_DATABASE and module.USE_CLAUDE
    assert module.database.url == dg.EnvVar("TIMELINE_DATABASE_URL")
    assert module.synthesizer.api_key == dg.EnvVar("ANTHROPIC_API_KEY")
    assert module.summarizer.api_key == dg.EnvVar("ANTHROPIC_API_KEY")
    assert module.synthesizer.base_url is None
    assert module.defs.resources is not None
    assert set(module.defs.resources) >= {"database", "synthesizer", "summarizer"}


_IMPORT_PROBE = """
import json, os, sys
import timeline_pipeline.definitions as definitions
at_import = sorted(m for m in ("lark_oapi", "anthropic") if m in sys.modules)
from timeline_pipeline.settings import load_settings
definitions.synthesizer.build(load_settings())  # what a synthesis run builds
after_build = sorted(m for m in ("lark_oapi", "anthropic") if m in sys.modules)
print(json.dumps({"import": at_import, "build": after_build}))
"""


@pytest.mark.parametrize("with_key", [False, True])
def test_a_synthesis_run_imports_neither_lark_oapi_nor_anthropic_it_does_not_use(
    with_key: bool,
) -> None:
    """A run process imports the code location before its first window (docs/scaling.md):
    lark-oapi (seconds to import) is never needed by a synthesis run, anthropic only with a key,
    and then only when the run builds its synthesizer."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "TIMELINE_", "LARK_", "DAGSTER_"))
    }
    if with_key:
        env.update(ANTHROPIC_API_KEY="sk-test-probe", ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    probe = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["import"] == []
    assert seen["build"] == (["anthropic"] if with_key else [])
