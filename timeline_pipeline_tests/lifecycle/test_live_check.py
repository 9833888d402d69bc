"""The registry check against the live database: indexes present, nothing undeletable."""

from __future__ import annotations

from sqlalchemy import Engine, text

from timeline_pipeline.lifecycle.live_check import registry_check
from timeline_pipeline_tests.lifecycle.support import EVIDENCE


def errors(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        checked, found = registry_check(conn)
    assert checked >= 7
    return [str(e) for e in found]


def test_the_registry_is_valid_on_a_migrated_database(engine: Engine) -> None:
    assert errors(engine) == []


def test_a_trigger_that_refuses_every_delete_fails_the_check(engine: Engine) -> None:
    """Append-only is not keep-forever: a table no role can delete from has no retention."""
    with engine.begin() as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(
                text(
                    "CREATE FUNCTION no_change() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'immutable'; END $$"
                )
            )
            conn.execute(
                text(
                    "CREATE TRIGGER evidence_immutable BEFORE UPDATE OR DELETE ON "
                    "workspace_timeline_evidence FOR EACH ROW EXECUTE FUNCTION no_change()"
                )
            )
        else:
            conn.execute(
                text(
                    "CREATE TRIGGER evidence_immutable BEFORE DELETE ON "
                    "workspace_timeline_evidence BEGIN SELECT RAISE(ABORT, 'immutable'); END"
                )
            )
    assert errors(engine) == [
        f"{EVIDENCE}: deletion: trigger 'evidence_immutable' fires on DELETE: rows could never "
        "be purged"
    ]


def test_a_missing_required_index_fails_the_check_naming_it(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text("DROP INDEX ix_workspace_timeline_evidence_workspace_id_occurred_at_id"))
    assert errors(engine) == [
        f"{EVIDENCE}: required_indexes[0]: no index on "
        "workspace_timeline_evidence(workspace_id, occurred_at, id) in the database"
    ]
