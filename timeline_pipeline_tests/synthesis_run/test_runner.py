"""One window's synthesis run against a real database (docs/design.md §7, §11, §1).

The synthesizers here are the real rule-based one, wrapped to record what it was given and,
where a test needs it, to fail on chosen calls; the Claude path uses the real SDK against the
loopback stand-in of the Messages API.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from timeline_pipeline.domain import entries as domain_entries
from timeline_pipeline.domain.evidence import EvidenceRecord
from timeline_pipeline.domain.sync_states import SyncState
from timeline_pipeline.domain.window_keys import WindowRef, decode_window_cursor
from timeline_pipeline.llm.forced_tool import build_claude_client
from timeline_pipeline.retry import RetryPolicy
from timeline_pipeline.settings import LarkTimelineSettings
from timeline_pipeline.store import entries, evidence, sync_states, window_states
from timeline_pipeline.synthesis.claude import ClaudeSynthesizer
from timeline_pipeline.synthesis.contract import (
    InvalidSynthesisOutput,
    SynthesisChunk,
    SynthesisResult,
    SynthesisUnavailable,
)
from timeline_pipeline.synthesis.rules import RULES_PROMPT_VERSION, RuleSynthesizer
from timeline_pipeline.synthesis.token_estimate import estimate_total_tokens
from timeline_pipeline.synthesis_run.bounds import chunk_limits
from timeline_pipeline.synthesis_run.lineage import aggregate_hash
from timeline_pipeline.synthesis_run.runner import RunStatus, WindowRunner, WindowRunReport
from timeline_pipeline_tests.support.anthropic_standin import (
    AnthropicStandIn,
    TextReply,
    cite_first_evidence,
    evidence_ids_in,
    overloaded,
    tool_reply,
)
from timeline_pipeline_tests.support.windows import WINDOW
from timeline_pipeline_tests.windows.support import MIN, T0, post, settings, workspace

REF = WindowRef("inc-1", "oc_chat", T0)
NOW = T0 + timedelta(minutes=30)
FACTS = [
    "we rolled back the deploy of payments-api to v{n}",
    "root cause: connection pool {n} exhausted after the config change",
    "error rate back to normal on shard {n}, recovered",
    "next step: add alerting on pool saturation for region {n}",
    "ok",
    "thanks!",
]


class Recording:
    """The rule synthesizer, recording each chunk and the window cursor it found committed."""

    name = "rules"
    prompt_version = RULES_PROMPT_VERSION

    def __init__(self, engine: Engine, script: Sequence[Exception | None] = ()) -> None:
        self.engine = engine
        self.inner = RuleSynthesizer()
        self.script = list(script)
        self.chunks: list[SynthesisChunk] = []
        self.cursors: list[str | None] = []
        self.gate: threading.Event | None = None
        self.during: list[Callable[[], None]] = []
        """Done inside the n-th call (one per call, in order): what arrives meanwhile."""

    def synthesize(self, chunk: SynthesisChunk) -> SynthesisResult:
        self.chunks.append(chunk)
        if self.during:
            self.during.pop(0)()
        state = current_state(self.engine)
        self.cursors.append(state.last_seen_cursor if state else None)
        if self.gate is not None:
            self.gate.wait(5)
        failure = self.script.pop(0) if self.script else None
        if failure is not None:
            raise failure
        return self.inner.synthesize(chunk)


def current_state(engine: Engine, ref: WindowRef = REF) -> SyncState | None:
    with engine.connect() as conn:
        return sync_states.get_by_key(
            conn, ref.workspace_id, "system", "lark_timeline_window", ref.source_key
        )


def runner(
    engine: Engine, synthesizer: Any, config: LarkTimelineSettings | None = None, **kw: Any
) -> WindowRunner:
    sleeps: list[float] = kw.pop("sleeps", [])
    return WindowRunner(
        engine,
        config or settings(retry_backoff_base="10ms", retry_backoff_cap="40ms"),
        synthesizer,
        clock=lambda: NOW,
        sleep=sleeps.append,
        rng=lambda: 1.0,
        **kw,
    )


def chat(engine: Engine, count: int, *, long_from: int | None = None) -> list[int]:
    """`count` messages in the 10:00 window, a few seconds apart, facts mixed with chatter."""
    workspace(engine)
    ids: list[int] = []
    for n in range(count):
        text = FACTS[n % len(FACTS)].format(n=n)
        if long_from is not None and n >= long_from:
            text += " - " + "stack frame at payments.pool.acquire(timeout=30) " * 12
        ids += post(engine, [T0 + timedelta(seconds=4 * n)], text=text, prefix=f"m{n}")
    return ids


def all_entries(engine: Engine) -> list[domain_entries.EntryRow]:
    with engine.connect() as conn:
        return entries.list_for_workspace(conn, "inc-1", statuses=("draft", "confirmed", "hidden"))


def test_a_130_message_window_runs_in_count_and_token_bounded_chunks_on_one_cursor(
    engine: Engine,
) -> None:
    ids = chat(engine, 130, long_from=60)
    recording = Recording(engine)
    config = settings()
    report = runner(engine, recording, config).run(REF, owner="run-1")

    assert report.status is RunStatus.COMPLETED
    limits = chunk_limits(config)
    sizes = [len(c.evidence) for c in recording.chunks]
    assert all(size <= 40 for size in sizes) and sizes[0] == 40  # count-bounded
    assert any(size < 40 for size in sizes[:-1])  # token-bounded before the end
    assert all(
        estimate_total_tokens(c.evidence) <= limits.max_estimated_tokens for c in recording.chunks
    )
    assert [e.id for c in recording.chunks for e in c.evidence] == ids  # each once, in order
    # One cursor, advanced after every committed chunk and before the next call.
    assert recording.cursors[0] is None
    for chunk, seen_next in zip(recording.chunks, recording.cursors[1:], strict=False):
        assert seen_next is not None
        assert decode_window_cursor(seen_next)[1] == chunk.evidence[-1].id
    state = current_state(engine)
    assert state is not None and state.status == "completed"
    assert (
        state.last_seen_cursor is not None
        and decode_window_cursor(state.last_seen_cursor)[1] == ids[-1]
    )
    assert state.last_seen_content_hash == report.aggregate_hash
    assert report.aggregate_hash == aggregate_hash(report.evidence)
    assert state.metadata["chunk_count"] == len(recording.chunks) == report.chunks_total
    assert state.metadata["evidence_count"] == 130
    assert report.metadata()["evidence_ids"] == ids


def test_every_generated_entry_traces_to_evidence_of_its_window(engine: Engine) -> None:
    ids = chat(engine, 24)
    post(engine, [T0 - 2 * MIN], text="we restarted the api gateway nodes", prefix="ctx")
    report = runner(engine, Recording(engine)).run(REF, owner="run-1")
    assert report.status is RunStatus.COMPLETED
    made = all_entries(engine)
    assert made and report.entries_created == len(made)
    for entry in made:
        assert entry.source == "ai" and entry.status == "draft"
        assert entry.evidence_ids and set(entry.evidence_ids) <= set(ids)
        assert [e["id"] for e in entry.metadata["evidence"]] == list(entry.evidence_ids)
        assert entry.metadata["window"] == REF.source_key
        assert entry.metadata["prompt_version"] == RULES_PROMPT_VERSION
        assert entry.window_state_id == report.state_id


def test_lookback_context_is_shown_but_never_counted(engine: Engine) -> None:
    chat(engine, 3)
    (before,) = post(
        engine, [T0 - 2 * MIN], text="we restarted the api gateway nodes", prefix="ctx"
    )
    recording = Recording(engine)
    report = runner(engine, recording).run(REF, owner="run-1")
    assert before in [c.id for c in recording.chunks[0].context]
    assert before not in [e.id for e in report.evidence]


def test_in_a_busy_chat_the_context_is_the_talk_nearest_the_window(engine: Engine) -> None:
    # 600 messages in the five minutes before the window: more than the 500 context rows a
    # run loads. The ones loaded must be the latest, right before the window, not the first.
    chat(engine, 3)
    lookback = [T0 - timedelta(minutes=5) + timedelta(milliseconds=500 * n) for n in range(600)]
    before = post(engine, lookback, text="we restarted the api gateway nodes", prefix="busy")
    recording = Recording(engine)
    runner(engine, recording).run(REF, owner="run-1")
    shown = [c.id for c in recording.chunks[0].context]
    assert shown, "the chunk got no read-only context"
    assert before[-1] in shown  # the message right before the window
    assert not set(shown) & set(before[:100])  # the oldest ones are beyond the 500 loaded
    times = [c.occurred_at for c in recording.chunks[0].context]
    assert times == sorted(times)


def test_a_window_made_before_a_size_change_reads_only_its_own_messages(engine: Engine) -> None:
    # docs/changing.md, "A 15-minute window": the window was made at 10 minutes; once
    # synthesisWindow says 15 minutes its run still reads [10:00, 10:10), and the message at
    # 10:12 stays the next window's.
    workspace(engine)
    inside = post(engine, [T0 + 2 * MIN, T0 + 7 * MIN], text=FACTS[0].format(n=1), prefix="in")
    (beyond,) = post(engine, [T0 + 12 * MIN], text=FACTS[1].format(n=2), prefix="next")
    with engine.begin() as conn:
        made = window_states.create_window_if_evidence(
            conn,
            workspace_id=REF.workspace_id,
            chat_id=REF.chat_id,
            window_start=T0,
            window_end=T0 + timedelta(minutes=10),
            now=NOW,
        )
    assert made is not None and made.recorded_window == timedelta(minutes=10)
    recording = Recording(engine)
    fifteen = settings(synthesis_window="15m", retry_backoff_base="10ms")
    report = runner(engine, recording, fifteen).run(REF, owner="run-1")
    assert [e.id for e in report.evidence] == inside
    assert beyond not in {e.id for chunk in recording.chunks for e in chunk.evidence}
    assert all(chunk.window_end == T0 + timedelta(minutes=10) for chunk in recording.chunks)


def test_a_window_with_nothing_worth_a_timeline_is_ignored(engine: Engine) -> None:
    workspace(engine)
    post(engine, [T0 + MIN, T0 + 2 * MIN], text="ok thanks")
    report = runner(engine, Recording(engine)).run(REF, owner="run-1")
    assert report.status is RunStatus.IGNORED
    state = current_state(engine)
    assert state is not None and state.status == "ignored"
    assert all_entries(engine) == []


def test_an_empty_window_gets_no_state_and_no_call(engine: Engine) -> None:
    chat(engine, 3)
    recording = Recording(engine)
    report = runner(engine, recording).run(WindowRef("inc-1", "oc_chat", T0 + WINDOW), owner="r")
    assert report.status is RunStatus.EMPTY
    assert recording.chunks == []
    assert current_state(engine, WindowRef("inc-1", "oc_chat", T0 + WINDOW)) is None


def test_a_second_run_for_the_same_window_does_nothing(engine: Engine) -> None:
    chat(engine, 6)
    assert runner(engine, Recording(engine)).run(REF, owner="run-1").status is RunStatus.COMPLETED
    before = all_entries(engine)
    again = Recording(engine)
    report = runner(engine, again).run(REF, owner="run-2")
    assert report.status is RunStatus.SKIPPED
    assert report.reason == "the window is already completed"
    assert again.chunks == [] and all_entries(engine) == before


def test_two_concurrent_runs_race_and_exactly_one_synthesizes(engine: Engine) -> None:
    chat(engine, 6)
    gate = threading.Event()
    first, second = Recording(engine), Recording(engine)
    first.gate = second.gate = gate
    reports: dict[str, Any] = {}

    def run(name: str, synthesizer: Recording) -> None:
        reports[name] = runner(engine, synthesizer).run(REF, owner=name)

    threads = [
        threading.Thread(target=run, args=("run-a", first)),
        threading.Thread(target=run, args=("run-b", second)),
    ]
    for thread in threads:
        thread.start()
    # Whoever claimed is now inside the synthesizer; the other has already lost the claim.
    for _ in range(200):
        if len(first.chunks) + len(second.chunks) and len(reports) == 1:
            break
        threading.Event().wait(0.02)
    gate.set()
    for thread in threads:
        thread.join(10)
    statuses = sorted(r.status.value for r in reports.values())
    assert statuses == ["completed", "skipped"]
    assert bool(first.chunks) != bool(second.chunks)
    state = current_state(engine)
    assert state is not None and state.attempt_count == 1


def test_an_invalid_answer_is_retried_with_backoff_then_succeeds(engine: Engine) -> None:
    chat(engine, 6)
    recording = Recording(
        engine,
        [InvalidSynthesisOutput("unknown_evidence_id"), InvalidSynthesisOutput("bad_schema")],
    )
    sleeps: list[float] = []
    report = runner(engine, recording, sleeps=sleeps).run(REF, owner="run-1")
    assert report.status is RunStatus.COMPLETED
    assert report.model_calls == 3 and report.chunks_total == 1
    assert sleeps == [0.01, 0.02]  # base * 2^(n-1), full jitter at its ceiling


def test_an_unavailable_synthesizer_defers_the_window_without_using_an_attempt(
    engine: Engine,
) -> None:
    # The synthesizer spent its own backed-off retries before raising: another round of them
    # now would multiply the calls (3 x 3 at the defaults). An outage is not the window's
    # fault: the window waits out a window-level backoff and keeps all its attempts.
    chat(engine, 6)
    sleeps: list[float] = []
    config = settings(synthesis_outage_backoff_base="1m", synthesis_outage_backoff_cap="3m")
    for deferral, wait in ((1, 1), (2, 2), (3, 3), (4, 3)):  # doubles, then capped
        down = Recording(engine, [SynthesisUnavailable("overloaded", "529 after 3 tries")])
        report = runner(engine, down, config, sleeps=sleeps).run(REF, owner=f"run-{deferral}")
        assert report.status is RunStatus.DEFERRED
        assert report.model_calls == 1 and sleeps == []
        state = current_state(engine)
        assert state is not None
        assert (state.status, state.attempt_count, state.deferred) == ("pending", 0, True)
        assert state.deferral_count == deferral
        assert state.next_attempt_at == NOW + wait * MIN  # rng 1.0: the top of the jitter
        assert state.last_error is not None and "overloaded" in state.last_error
    done = runner(engine, Recording(engine), config).run(REF, owner="run-5")
    assert done.status is RunStatus.COMPLETED
    state = current_state(engine)
    assert state is not None
    assert (state.status, state.attempt_count, state.deferral_count) == ("completed", 1, 0)


def test_a_deferral_honours_the_services_retry_after_up_to_the_cap(engine: Engine) -> None:
    chat(engine, 6)
    config = settings(synthesis_outage_backoff_base="10s", synthesis_outage_backoff_cap="5m")
    limited = Recording(engine, [SynthesisUnavailable("rate_limited", retry_after=120.0)])
    assert runner(engine, limited, config).run(REF, owner="run-1").status is RunStatus.DEFERRED
    state = current_state(engine)
    assert state is not None and state.next_attempt_at == NOW + timedelta(seconds=120)
    longer = Recording(engine, [SynthesisUnavailable("rate_limited", retry_after=3600.0)])
    assert runner(engine, longer, config).run(REF, owner="run-2").status is RunStatus.DEFERRED
    state = current_state(engine)
    assert state is not None and state.next_attempt_at == NOW + timedelta(minutes=5)


def test_a_chunk_out_of_attempts_fails_the_window_then_a_retry_resumes_after_the_last_commit(
    engine: Engine,
) -> None:
    ids = chat(engine, 50)  # two chunks: 40 + 10
    config = settings(synthesis_chunk_max_attempts=2, retry_backoff_base="10ms")
    invalid = InvalidSynthesisOutput("unknown_evidence_id")
    failing = Recording(engine, [None, invalid, invalid])
    report = runner(engine, failing, config).run(REF, owner="run-1")
    assert report.status is RunStatus.FAILED
    assert report.chunks_run == 1 and report.model_calls == 3
    state = current_state(engine)
    assert state is not None and (state.status, state.attempt_count) == ("failed", 1)
    assert state.last_error is not None
    assert state.last_error.startswith("chunk 2/2 (evidence ")
    assert "unknown_evidence_id" in state.last_error and "payments" not in state.last_error
    assert len(state.last_error) <= 1000
    assert state.next_attempt_at is not None and state.next_attempt_at > NOW
    created_first = {e.fingerprint for e in all_entries(engine)}
    assert created_first

    retry = Recording(engine)
    report = runner(engine, retry, config).run(REF, owner="run-2")
    assert report.status is RunStatus.COMPLETED
    assert report.resumed_after is not None
    assert [e.id for c in retry.chunks for e in c.evidence] == ids[40:]  # chunk 1 not redone
    assert [c.index for c in retry.chunks] == [1]  # still the window's second part
    assert report.aggregate_hash == aggregate_hash(report.evidence)  # still the whole window
    state = current_state(engine)
    assert state is not None and (state.status, state.attempt_count) == ("completed", 2)
    assert state.metadata["chunk_count"] == 2
    assert created_first <= {e.fingerprint for e in all_entries(engine)}


def test_whole_window_attempts_are_bounded_and_an_operator_replay_runs_it_again(
    engine: Engine,
) -> None:
    chat(engine, 6)
    config = settings(synthesis_window_max_attempts=2, synthesis_chunk_max_attempts=1)
    for owner in ("run-1", "run-2"):
        invalid = Recording(engine, [InvalidSynthesisOutput("bad_schema")])
        report = runner(engine, invalid, config).run(REF, owner=owner)
        assert report.status is RunStatus.FAILED
    out = runner(engine, Recording(engine), config).run(REF, owner="run-3")
    assert out.status is RunStatus.SKIPPED
    assert out.reason is not None and "no attempts left" in out.reason
    replay = Recording(engine)
    report = runner(engine, replay, config).run(REF, owner="run-4", replay=True)
    assert report.status is RunStatus.COMPLETED and report.replayed
    assert replay.chunks
    state = current_state(engine)
    assert state is not None and (state.status, state.attempt_count) == ("completed", 1)


def test_a_replay_of_a_completed_window_reruns_it_whole_without_duplicates(
    engine: Engine,
) -> None:
    chat(engine, 12)
    runner(engine, Recording(engine)).run(REF, owner="run-1")
    before = {(e.id, e.fingerprint) for e in all_entries(engine)}
    replay = Recording(engine)
    report = runner(engine, replay).run(REF, owner="run-2", replay=True)
    assert replay.cursors[0] is None  # from the first chunk again
    assert {(e.id, e.fingerprint) for e in all_entries(engine)} == before
    assert report.entries_created == report.entries_updated == 0
    # Every proposal was already stored unchanged: no new material entry, so `ignored`.
    assert report.entries_unchanged > 0
    assert report.status is RunStatus.IGNORED
    state = current_state(engine)
    assert state is not None and state.status == "ignored"


def test_a_replay_racing_the_summary_flag_still_replays(engine: Engine) -> None:
    chat(engine, 12)
    runner(engine, Recording(engine)).run(REF, owner="run-1")

    class SummaryFlagsMeanwhile(WindowRunner):
        """Between the replay reading the state and resetting it, the summary sensor flags
        the finished window, which moves its revision."""

        def _ensure_state(self, ref: WindowRef) -> SyncState | None:
            read = super()._ensure_state(ref)
            assert read is not None
            with self.engine.begin() as conn:
                assert window_states.mark_summary_attempted(conn, read.id)
            return read

    replay = Recording(engine)
    racing = SummaryFlagsMeanwhile(
        engine, settings(), replay, clock=lambda: NOW, sleep=lambda _s: None, rng=lambda: 1.0
    )
    report = racing.run(REF, owner="run-2", replay=True)
    assert report.replayed and report.status is not RunStatus.SKIPPED, report.reason
    assert replay.chunks and replay.cursors[0] is None
    state = current_state(engine)
    assert state is not None and state.status in ("completed", "ignored")
    assert state.attempt_count == 1 and not state.summary_attempted


def test_human_and_confirmed_entries_are_never_overwritten(engine: Engine) -> None:
    chat(engine, 12)
    runner(engine, Recording(engine)).run(REF, owner="run-1")
    first, second, *_ = all_entries(engine)
    with engine.begin() as conn:
        entries.set_status(conn, first, "confirmed")
        entries.edit_entry(
            conn,
            second,
            {"title": "Rolled back by hand", "detail": "curator wording"},
            now=datetime.now(UTC),
        )
    confirmed_before = {
        k: v for k, v in vars_of(first).items() if k not in {"status", "revision", "updated_at"}
    }
    runner(engine, Recording(engine)).run(REF, owner="run-2", replay=True)
    after = {e.id: e for e in all_entries(engine)}
    assert after[first.id].status == "confirmed"
    assert {
        k: v
        for k, v in vars_of(after[first.id]).items()
        if k not in {"status", "revision", "updated_at"}
    } == confirmed_before
    assert (after[second.id].title, after[second.id].detail) == (
        "Rolled back by hand",
        "curator wording",
    )


def vars_of(entry: domain_entries.EntryRow) -> dict[str, Any]:
    return {name: getattr(entry, name) for name in entry.__slots__}


def test_a_versioned_rerun_has_its_own_state_and_reuses_the_drafts(engine: Engine) -> None:
    chat(engine, 12)
    runner(engine, Recording(engine)).run(REF, owner="run-1")
    drafts = {e.fingerprint for e in all_entries(engine)}
    v2 = WindowRef("inc-1", "oc_chat", T0, "v2")
    report = runner(engine, Recording(engine)).run(v2, owner="run-2")
    assert report.status is RunStatus.IGNORED  # the same drafts again: nothing new
    assert report.entries_created == 0
    state = current_state(engine, v2)
    assert (
        state is not None
        and state.source_key == "chat/oc_chat/processor/v2/window/2026-11-29T10:00:00Z"
    )
    assert state.id == report.state_id and state.status == "ignored"
    default = current_state(engine)
    assert default is not None and default.id != state.id
    assert {e.fingerprint for e in all_entries(engine)} == drafts


def test_an_ai_failure_then_a_retry_binds_the_drafts(engine: Engine) -> None:
    """The real anthropic client against the stand-in: 529, then a valid tool answer."""
    ids = chat(engine, 5)
    config = settings(synthesis_chunk_max_attempts=1)
    with AnthropicStandIn(script=[overloaded(), tool_reply(cite_first_evidence)]) as standin:
        client = build_claude_client(standin.api_key, standin.base_url, timeout_seconds=5)
        claude = ClaudeSynthesizer(
            client,
            model="claude-standin",
            max_output_tokens=1024,
            retry=RetryPolicy(
                attempts=1, backoff_base=0.01, backoff_cap=0.02, max_retry_after=0.05
            ),
        )
        deferred = runner(engine, claude, config).run(REF, owner="run-1")
        assert deferred.status is RunStatus.DEFERRED
        assert deferred.reason is not None and "overloaded" in deferred.reason
        assert all_entries(engine) == []
        done = runner(engine, claude, config).run(REF, owner="run-2")
        assert len(standin.requests) == 2
    assert done.status is RunStatus.COMPLETED
    assert (done.input_tokens, done.output_tokens, done.model) == (120, 40, "claude-standin")
    (entry,) = all_entries(engine)
    assert entry.evidence_ids == (ids[0],)
    assert entry.metadata["processor"] == "claude"
    assert entry.metadata["model"] == "claude-standin"
    state = current_state(engine)
    # The outage used no attempt.
    assert state is not None and (state.status, state.attempt_count) == ("completed", 1)


def sent(recording: Recording) -> list[int]:
    return [e.id for c in recording.chunks for e in c.evidence]


def test_a_message_delivered_late_before_the_cursor_is_synthesized_by_the_retry(
    engine: Engine,
) -> None:
    # Chunk 1 (40 rows) commits, chunk 2 fails; then a message from 10:00:10 is delivered
    # late, before the cursor. Resuming after the cursor would count it (hash, ids, count)
    # without ever sending it to the model: the retry must synthesize it.
    ids = chat(engine, 50)
    config = settings(synthesis_chunk_max_attempts=1)
    failing = Recording(engine, [None, InvalidSynthesisOutput("bad_schema")])
    assert runner(engine, failing, config).run(REF, owner="run-1").status is RunStatus.FAILED
    (late,) = post(
        engine, [T0 + timedelta(seconds=10)], text="we paged the database on-call", prefix="late"
    )

    retry = Recording(engine)
    report = runner(engine, retry, config).run(REF, owner="run-2")

    assert report.status is RunStatus.COMPLETED
    assert late in sent(retry)
    assert report.restarted and report.resumed_after is None
    processed = set(sent(retry))
    assert {e.id for e in report.evidence} == processed == set(ids) | {late}
    assert report.aggregate_hash == aggregate_hash(report.evidence)
    metadata = report.metadata()
    assert metadata["evidence_count"] == 51 and late in metadata["evidence_ids"]
    assert metadata["late_evidence"] == 0 and metadata["restarted_for_late_evidence"] is True
    state = current_state(engine)
    assert state is not None and state.status == "completed"
    assert state.last_seen_content_hash == report.aggregate_hash
    assert state.metadata["evidence_count"] == 51


def test_an_edit_before_the_cursor_is_synthesized_again_in_its_new_version(
    engine: Engine,
) -> None:
    ids = chat(engine, 50)
    config = settings(synthesis_chunk_max_attempts=1)
    failing = Recording(engine, [None, InvalidSynthesisOutput("bad_schema")])
    runner(engine, failing, config).run(REF, owner="run-1")
    with engine.begin() as conn:
        row = evidence.get_many(conn, "inc-1", [ids[3]])[0]
        evidence.upsert(
            conn,
            EvidenceRecord(
                workspace_id=row.workspace_id,
                source=row.source,
                source_type=row.source_type,
                source_key=row.source_key,
                occurred_at=row.occurred_at,
                source_updated_at=row.source_updated_at + MIN,
                content="next step: add alerting on pool saturation, owner alice",
                content_hash="edited-3",
                actor_id=row.actor_id,
                scope_key=row.scope_key,
                metadata=row.metadata,
                ai_eligible=True,
            ),
        )
    retry = Recording(engine)
    report = runner(engine, retry, config).run(REF, owner="run-2")
    assert report.status is RunStatus.COMPLETED
    versions = {e.id: e.content_hash for c in retry.chunks for e in c.evidence}
    assert versions[ids[3]] == "edited-3"
    assert {e.id: e.content_hash for e in report.evidence}[ids[3]] == "edited-3"
    assert report.aggregate_hash == aggregate_hash(report.evidence)


def test_a_retry_with_nothing_late_still_resumes_after_the_last_commit(engine: Engine) -> None:
    ids = chat(engine, 50)
    config = settings(synthesis_chunk_max_attempts=1)
    failing = Recording(engine, [None, InvalidSynthesisOutput("bad_schema")])
    runner(engine, failing, config).run(REF, owner="run-1")
    (after_cursor,) = post(engine, [T0 + 9 * MIN], text="error rate back to normal", prefix="z")
    retry = Recording(engine)
    report = runner(engine, retry, config).run(REF, owner="run-2")
    assert sent(retry) == [*ids[40:], after_cursor]
    assert not report.restarted and report.resumed_after is not None
    assert [e.id for e in report.evidence] == [*ids, after_cursor]


def test_evidence_arriving_while_the_run_works_gets_one_more_pass(engine: Engine) -> None:
    ids = chat(engine, 6)
    arrived: list[int] = []
    recording = Recording(engine)
    recording.during.append(
        lambda: arrived.extend(
            post(engine, [T0 + timedelta(seconds=2)], text="we rolled back again", prefix="d")
        )
    )
    report = runner(engine, recording).run(REF, owner="run-1")
    assert report.status is RunStatus.COMPLETED
    assert [[e.id for e in c.evidence] for c in recording.chunks] == [ids, arrived]
    assert [e.id for e in report.evidence] == [ids[0], arrived[0], *ids[1:]]
    assert report.aggregate_hash == aggregate_hash(report.evidence)
    assert report.metadata()["late_evidence"] == 0
    state = current_state(engine)
    assert state is not None and state.last_seen_cursor is not None
    assert decode_window_cursor(state.last_seen_cursor)[1] == ids[-1]  # never moved back


def test_evidence_still_arriving_after_the_extra_pass_is_reported_late_not_covered(
    engine: Engine,
) -> None:
    ids = chat(engine, 6)
    arrived: list[int] = []

    def deliver(prefix: str) -> Callable[[], None]:
        at = T0 + timedelta(seconds=30)
        return lambda: arrived.extend(post(engine, [at], text="db failover done", prefix=prefix))

    recording = Recording(engine)
    recording.during += [deliver("first"), deliver("second")]
    report = runner(engine, recording).run(REF, owner="run-1")

    assert report.status is RunStatus.COMPLETED
    first, second = arrived
    assert second not in sent(recording)
    assert {e.id for e in report.evidence} == {*ids, first}
    assert report.aggregate_hash == aggregate_hash(report.evidence)
    metadata = report.metadata()
    assert metadata["evidence_count"] == 7 and second not in metadata["evidence_ids"]
    assert (metadata["late_evidence"], metadata["late_evidence_ids"]) == (1, [second])
    state = current_state(engine)
    assert state is not None and state.status == "completed"
    assert state.last_seen_content_hash == report.aggregate_hash
    assert (state.metadata["late_evidence"], state.metadata["late_evidence_ids"]) == (1, [second])
    assert state.metadata["evidence_count"] == 7


def run_window(engine: Engine, start: datetime) -> WindowRunReport:
    ref = WindowRef("inc-1", "oc_chat", start)
    return WindowRunner(
        engine, settings(), Recording(engine), clock=lambda: start + timedelta(minutes=30)
    ).run(ref, owner=f"run-{start:%H%M}")


def rollbacks(engine: Engine) -> list[domain_entries.EntryRow]:
    return [e for e in all_entries(engine) if "roll" in e.title.lower()]


def test_the_same_rollback_restated_nearby_is_one_entry(engine: Engine) -> None:
    # Said at 10:08, restated at 10:14 in the next window: one fact, one entry, both messages.
    workspace(engine)
    text = "we rolled back the deploy of payments-api to v4.17.2"
    first = post(engine, [T0 + 8 * MIN], text=text, prefix="a")
    again = post(engine, [T0 + 14 * MIN], text=text, prefix="b")
    run_window(engine, T0)
    run_window(engine, T0 + WINDOW)
    (entry,) = rollbacks(engine)
    assert set(entry.evidence_ids) == {*first, *again}
    assert entry.occurred_at == T0 + 8 * MIN


def test_a_second_rollback_an_hour_later_is_an_entry_of_its_own(engine: Engine) -> None:
    workspace(engine)
    text = "we rolled back the deploy of payments-api to v4.17.2"
    first = post(engine, [T0 + 8 * MIN], text=text, prefix="a")
    second = post(engine, [T0 + 68 * MIN], text=text, prefix="b")
    run_window(engine, T0)
    run_window(engine, T0 + timedelta(hours=1))
    made = rollbacks(engine)
    assert [(e.occurred_at, e.evidence_ids) for e in made] == [
        (T0 + 8 * MIN, tuple(first)),
        (T0 + 68 * MIN, tuple(second)),
    ]
    assert made[0].title == made[1].title and made[0].fingerprint != made[1].fingerprint
    # Replaying the later window re-finds its own entry; it does not merge into the first.
    replay = WindowRunner(
        engine, settings(), Recording(engine), clock=lambda: T0 + timedelta(hours=2)
    ).run(WindowRef("inc-1", "oc_chat", T0 + timedelta(hours=1)), owner="replay", replay=True)
    assert replay.entries_created == 0
    assert [e.id for e in rollbacks(engine)] == [e.id for e in made]


def _rewording_claude(standin: AnthropicStandIn) -> ClaudeSynthesizer:
    client = build_claude_client(standin.api_key, standin.base_url, timeout_seconds=5)
    return ClaudeSynthesizer(
        client,
        model="claude-standin",
        max_output_tokens=1024,
        retry=RetryPolicy(attempts=1, backoff_base=0.01, backoff_cap=0.02, max_retry_after=0.05),
    )


def test_claude_rewording_on_a_restart_and_a_replay_adds_no_entry(engine: Engine) -> None:
    """A stand-in that words the same fact differently on every call, bound to the same
    evidence: a restarted window (late evidence before the cursor) and an operator replay
    update the entries the first run made instead of adding reworded copies."""
    chat(engine, 50)  # two chunks: 40 + 10
    wordings = itertools.count()

    def reworded(body: Mapping[str, Any]) -> dict[str, Any]:
        first = evidence_ids_in(body)[0]
        n = next(wordings)
        title = ["Rolled back payments-api", "payments-api deploy reverted"][n % 2]
        return {
            "entries": [
                {"title": f"{title} ({first})", "category": "mitigation", "evidence_ids": [first]}
            ]
        }

    config = settings(synthesis_chunk_max_attempts=1)
    with AnthropicStandIn(default=tool_reply(reworded)) as standin:
        claude = _rewording_claude(standin)
        # Chunk 1 commits; chunk 2 gets an answer without the tool: the window fails.
        standin.enqueue(tool_reply(reworded), TextReply())
        assert runner(engine, claude, config).run(REF, owner="run-1").status is RunStatus.FAILED
        assert len(all_entries(engine)) == 1
        post(engine, [T0 + timedelta(seconds=10)], text="we paged the DBA", prefix="late")
        restarted = runner(engine, claude, config).run(REF, owner="run-2")
        assert restarted.status is RunStatus.COMPLETED and restarted.restarted
        after_restart = {e.id for e in all_entries(engine)}
        assert len(after_restart) == 2  # one per chunk, the first one re-found
        replayed = runner(engine, claude, config).run(REF, owner="run-3", replay=True)
        assert replayed.status in (RunStatus.COMPLETED, RunStatus.IGNORED)
        bodies = [request.body for request in standin.requests]
    assert {e.id for e in all_entries(engine)} == after_restart
    assert replayed.entries_created == 0
    # Every call pinned its sampling, and the reworded titles replaced the old ones.
    assert all(body["temperature"] == 0 for body in bodies)
    assert len({e.title for e in all_entries(engine)}) == 2
