from datetime import timedelta
from pathlib import Path

import pytest

from timeline_pipeline.settings import (
    SettingsError,
    load_runtime_environment,
    load_timeline_settings,
)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for key in list(os.environ):
        if key.startswith("TIMELINE_") or key.startswith("LARK_") or key.startswith("ANTHROPIC_"):
            monkeypatch.delenv(key)


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    path = tmp_path / "timeline.yaml"
    path.write_text(body)
    monkeypatch.setenv("TIMELINE_CONFIG", str(path))


def _lark_section(lines: str) -> str:
    indented = "\n".join("        " + line for line in lines.strip().splitlines())
    return f"services:\n  workspace:\n    timeline:\n      lark:\n{indented}\n"


def test_defaults_are_the_seed_values_with_every_flag_off() -> None:
    s = load_timeline_settings()
    assert (s.enabled, s.event_ingestion_enabled, s.reconciliation_enabled) == (False, False, False)
    assert s.ingestion_lookback == timedelta(hours=72)
    assert s.synthesis_scan_interval == timedelta(minutes=2)
    assert s.synthesis_window == timedelta(minutes=10)
    assert s.synthesis_window_close_grace == timedelta(minutes=3)
    assert s.synthesis_context_lookback == timedelta(minutes=5)
    assert s.synthesis_stale_timeout == timedelta(minutes=15)
    assert s.synthesis_window_max_attempts == 3
    assert s.reconcile_interval == timedelta(minutes=5)
    assert s.reconcile_overlap == timedelta(minutes=10)
    assert s.evidence_refresh_interval == timedelta(hours=1)
    assert s.evidence_refresh_lookback == timedelta(hours=24)
    assert s.evidence_batch_limit == 40
    assert s.max_concurrent_synthesis == 2
    assert s.max_concurrent_per_workspace == 1
    assert s.workspace_types == ["incident"]


def test_yaml_uses_the_seed_shape_and_duration_spelling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(
        tmp_path,
        monkeypatch,
        _lark_section("enabled: true\nsynthesisWindow: 5m\nreconcileOverlap: 90s"),
    )
    s = load_timeline_settings()
    assert s.enabled is True
    assert s.synthesis_window == timedelta(minutes=5)
    assert s.reconcile_overlap == timedelta(seconds=90)


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _config(tmp_path, monkeypatch, _lark_section("synthesisWindow: 5m\nevidenceBatchLimit: 10"))
    monkeypatch.setenv("TIMELINE_LARK_SYNTHESIS_WINDOW", "15m")
    monkeypatch.setenv("TIMELINE_LARK_WORKSPACE_TYPES", '["incident", "outage"]')
    s = load_timeline_settings()
    assert s.synthesis_window == timedelta(minutes=15)
    assert s.evidence_batch_limit == 10
    assert s.workspace_types == ["incident", "outage"]


@pytest.mark.parametrize(
    ("yaml_lines", "key"),
    [
        ("synthesisWindow: 7m", "synthesisWindow"),
        ("synthesisWindow: 2h", "synthesisWindow"),
        ("synthesisWindowCloseGrace: 11m", "synthesisWindowCloseGrace"),
        ("ingestionLookback: 73h", "ingestionLookback"),
        ("evidenceBatchLimit: -1", "evidenceBatchLimit"),
        ("maxConcurrentSynthesis: 0", "maxConcurrentSynthesis"),
        ("reconcileOverlap: -10m", "reconcileOverlap"),
        ("synthesisScanInterval: 120", "synthesisScanInterval"),
        ("bogusKey: 1", "bogusKey"),
        ("synthesis_window: 5m", "synthesis_window"),
        ("synthesisStaleTimeout: 30s", "synthesisStaleTimeout"),
    ],
)
def test_invalid_values_fail_with_one_line_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, yaml_lines: str, key: str
) -> None:
    _config(tmp_path, monkeypatch, _lark_section(yaml_lines))
    with pytest.raises(SettingsError) as info:
        load_timeline_settings()
    message = str(info.value)
    assert "\n" not in message
    assert f"services.workspace.timeline.lark.{key}" in message


def test_unknown_environment_key_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIMELINE_LARK_SYNTHESIS_WINDOWW", "5m")
    with pytest.raises(SettingsError, match="TIMELINE_LARK_SYNTHESIS_WINDOWW"):
        load_timeline_settings()


def test_broken_or_missing_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path, monkeypatch, "services: [\n")
    with pytest.raises(SettingsError) as info:
        load_timeline_settings()
    assert "\n" not in str(info.value)
    monkeypatch.setenv("TIMELINE_CONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(SettingsError, match="TIMELINE_CONFIG"):
        load_timeline_settings()


def test_a_shared_file_without_our_section_keeps_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _config(tmp_path, monkeypatch, "services:\n  other:\n    x: 1\n")
    assert load_timeline_settings().synthesis_window == timedelta(minutes=10)


def test_runtime_environment_reads_the_documented_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIMELINE_DATABASE_URL", "sqlite:///x.db")
    monkeypatch.setenv("LARK_APP_ID", "cli_app")
    monkeypatch.setenv("LARK_APP_SECRET", "s3cret")
    monkeypatch.setenv("MAINTENANCE_PORT", "6061")
    env = load_runtime_environment()
    assert env.database_url == "sqlite:///x.db"
    assert env.lark_app_id == "cli_app"
    assert env.lark_app_secret.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(env)
    assert env.maintenance_port == "6061"


def test_an_invalid_maintenance_port_does_not_stop_the_configuration_from_loading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Only the maintenance listener is disabled by it (maintenance/test_listener.py).
    monkeypatch.setenv("MAINTENANCE_PORT", "70000")
    assert load_runtime_environment().maintenance_port == "70000"
