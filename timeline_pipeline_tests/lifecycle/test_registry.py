"""The registry: collected from the store modules, checked as a whole, ordered leaves first."""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType

import pytest

from timeline_pipeline.domain.lifecycle import ChildLink, RetentionClass
from timeline_pipeline.lifecycle.registry import (
    RegistryInvalid,
    UnknownDescriptor,
    check_declarations,
    declarations,
    load_registry,
)
from timeline_pipeline.store.evidence import DESCRIPTOR as EVIDENCE
from timeline_pipeline.store.sync_states import DESCRIPTOR as WINDOWS
from timeline_pipeline_tests.lifecycle.support import BINDINGS, ENTRIES


def module(name: str, **attrs: object) -> ModuleType:
    made = ModuleType(f"timeline_pipeline.store.{name}")
    for key, value in attrs.items():
        setattr(made, key, value)
    return made


def test_every_table_with_a_lifecycle_is_registered_by_its_own_store_module() -> None:
    registry = load_registry()
    assert {
        "evidence.workspace_timeline_evidence",
        "sync_states.workspace_timeline_sync_states",
        "entries.workspace_timeline_entries",
        "entries.workspace_timeline_entry_evidence",
        "summaries.workspace_timeline_summaries",
        "audit.audit_events",
        "reconcile_threads.workspace_timeline_reconcile_threads",
        "lifecycle_runs.lifecycle_runs",
    } <= set(registry.descriptors)
    for key, d in registry.descriptors.items():
        assert key.split(".", 1)[0] == d.owner


def test_bindings_are_purged_before_the_entries_and_evidence_they_link() -> None:
    order = [d.key for d in load_registry().select(None)]
    assert order.index(BINDINGS) < order.index(ENTRIES)
    assert order.index(BINDINGS) < order.index(EVIDENCE.key)


def test_a_hold_on_one_link_reaches_the_whole_chain() -> None:
    registry = load_registry()
    chain = registry.chain_keys(registry.get(BINDINGS))
    assert set(chain) == {BINDINGS, ENTRIES, EVIDENCE.key}
    assert registry.chain_keys(registry.get(WINDOWS.key)) == (WINDOWS.key,)


def test_a_key_declared_twice_is_refused_naming_both_modules() -> None:
    found = [("evidence", EVIDENCE), ("evidence", EVIDENCE)]
    errors = [str(e) for e in check_declarations(found)]
    assert f"{EVIDENCE.key}: key: also declared by 'evidence'" in errors


def test_a_link_to_an_unknown_descriptor_is_refused() -> None:
    orphan = replace(EVIDENCE, children=(ChildLink("nowhere.table", "evidence_id"),))
    errors = [str(e) for e in check_declarations([("evidence", orphan)])]
    assert f"{EVIDENCE.key}: children[0]: unknown 'nowhere.table'" in errors


def test_an_invalid_registry_refuses_to_load_and_names_every_problem() -> None:
    bad = replace(EVIDENCE, batch_limit=60_000, retention_class="forever")
    with pytest.raises(RegistryInvalid) as caught:
        load_registry([module("evidence", DESCRIPTOR=bad)])
    fields = {e.field for e in caught.value.errors}
    assert {"batch_limit", "retention_class"} <= fields
    assert "lifecycle registry invalid" in str(caught.value)


def test_an_unknown_descriptor_key_is_refused_listing_the_known_ones() -> None:
    with pytest.raises(UnknownDescriptor, match=r"unknown key 'evidence\.nope'"):
        load_registry().get("evidence.nope")


def test_every_table_of_the_schema_has_a_descriptor_or_a_stated_reason_for_none() -> None:
    from sqlalchemy import Column, Integer, Table

    from timeline_pipeline.db.schema import metadata
    from timeline_pipeline.lifecycle.live_check import unregistered
    from timeline_pipeline.lifecycle.registry import declarations

    assert unregistered(declarations()) == []
    newcomer = Table(
        "interaction_requests_probe", metadata, Column("id", Integer, primary_key=True)
    )
    try:
        (error,) = unregistered(declarations())
        assert error.key == "interaction_requests_probe"
        assert "no lifecycle descriptor" in error.reason
    finally:
        metadata.remove(newcomer)


def test_interaction_retention_feeds_the_interaction_descriptors_default_within_bounds() -> None:
    from datetime import timedelta

    from timeline_pipeline.lifecycle.registry import (
        INTERACTION_DESCRIPTORS,
        RegistryInvalid,
        configured_defaults,
        load_registry,
    )
    from timeline_pipeline.settings import LarkTimelineSettings

    ten = load_registry(
        default_days=configured_defaults(
            LarkTimelineSettings(interaction_retention=timedelta(days=9, hours=1))
        )
    )
    assert {ten.get(k).default_retention_days for k in INTERACTION_DESCRIPTORS} == {10}
    assert ten.get("evidence.workspace_timeline_evidence").default_retention_days == 30
    with pytest.raises(RegistryInvalid, match="default_retention_days"):
        load_registry(
            default_days=configured_defaults(
                LarkTimelineSettings(interaction_retention=timedelta(days=400))
            )
        )


DECLARED_RETENTION = {
    # key: (retention class, min, default, max days): behaviour and contracts (docs/lifecycle.md,
    # "Retention"); the keys are stored in lifecycle runs, holds and audit rows.
    "audit.audit_events": (RetentionClass.AUDIT_SECURITY, 365, 730, 2555),
    "chat_pins.timeline_chat_pins": (RetentionClass.COMMUNICATION_LOG, 30, 180, 730),
    "entries.workspace_timeline_entries": (RetentionClass.COMMUNICATION_LOG, 30, 180, 730),
    "entries.workspace_timeline_entry_evidence": (RetentionClass.COMMUNICATION_LOG, 7, 30, 730),
    "evidence.workspace_timeline_evidence": (RetentionClass.COMMUNICATION_LOG, 7, 30, 365),
    "follow_up_tasks.follow_up_tasks": (RetentionClass.COMMUNICATION_LOG, 30, 180, 730),
    "incident_reports.incident_reports": (RetentionClass.COMMUNICATION_LOG, 30, 180, 730),
    "interaction_admissions.interaction_admissions": (RetentionClass.OPERATIONAL_QUEUE, 7, 30, 365),
    "interaction_requests.interaction_requests": (RetentionClass.OPERATIONAL_QUEUE, 7, 30, 365),
    "interaction_tokens.interaction_tokens": (RetentionClass.OPERATIONAL_QUEUE, 7, 30, 365),
    "lifecycle_runs.lifecycle_runs": (RetentionClass.SYSTEM_EVENT, 90, 365, 1825),
    "maintenance_jobs.maintenance_jobs": (RetentionClass.SYSTEM_EVENT, 30, 365, 1825),
    "pin_tombstones.timeline_pin_tombstones": (RetentionClass.OPERATIONAL_QUEUE, 1, 7, 30),
    "recall_tombstones.workspace_timeline_recall_tombstones": (
        RetentionClass.OPERATIONAL_QUEUE,
        3,
        7,
        30,
    ),
    "report_documents.incident_report_documents": (RetentionClass.COMMUNICATION_LOG, 30, 180, 730),
    "report_milestones.incident_report_milestones": (
        RetentionClass.COMMUNICATION_LOG,
        30,
        180,
        730,
    ),
    "reconcile_threads.workspace_timeline_reconcile_threads": (
        RetentionClass.OPERATIONAL_QUEUE,
        1,
        3,
        3,
    ),
    "rerun_previews.window_rerun_previews": (RetentionClass.OPERATIONAL_QUEUE, 1, 2, 14),
    "retired_partitions.lifecycle_retired_partitions": (RetentionClass.SYSTEM_EVENT, 7, 30, 365),
    "status_changes.workspace_status_changes": (RetentionClass.AUDIT_SECURITY, 365, 730, 2555),
    "summaries.workspace_timeline_summaries": (RetentionClass.COMMUNICATION_LOG, 30, 180, 730),
    "sync_states.workspace_timeline_sync_states": (RetentionClass.SYSTEM_EVENT, 14, 90, 730),
    "ui_sessions.ui_sessions": (RetentionClass.AUDIT_SECURITY, 1, 30, 365),
    "ui_sessions.ui_signin_links": (RetentionClass.AUDIT_SECURITY, 1, 30, 365),
}


def test_every_descriptor_keeps_its_key_class_and_retention_days() -> None:
    declared = {
        d.key: (
            d.retention_class,
            d.retention_min_days,
            d.default_retention_days,
            d.retention_max_days,
        )
        for _, d in declarations()
    }
    assert declared == DECLARED_RETENTION
