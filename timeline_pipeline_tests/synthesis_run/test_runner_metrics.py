"""What a window run reports about its model calls (docs/design.md §12: AI chunks, evidence
per chunk, tokens, latency, retries and validation errors), on a real database with the real
rule synthesizer; the clock that times the calls is a counter, so the latency is exact."""

from __future__ import annotations

from collections.abc import Iterator

from sqlalchemy import Engine

from timeline_pipeline.synthesis.contract import InvalidSynthesisOutput
from timeline_pipeline.synthesis_run.runner import RunStatus
from timeline_pipeline_tests.synthesis_run.test_runner import REF, Recording, chat, runner


def ticking(step: float) -> Iterator[float]:
    moment = 0.0
    while True:
        yield moment
        moment += step


def test_a_run_reports_chunks_evidence_per_chunk_retries_validation_errors_and_latency(
    engine: Engine,
) -> None:
    chat(engine, 50)  # two chunks: 40 + 10
    synthesizer = Recording(
        engine,
        [InvalidSynthesisOutput("unknown_evidence_id"), InvalidSynthesisOutput("bad_schema")],
    )
    clock = ticking(0.25)

    report = runner(engine, synthesizer, timer=lambda: next(clock)).run(REF, owner="run-1")

    assert report.status is RunStatus.COMPLETED
    meta = report.metadata()
    assert meta["chunks"] == 2 and meta["evidence_per_chunk"] == [40, 10]
    # Chunk 1: refused as invalid twice, then answered; chunk 2: answered.
    assert meta["model_calls"] == 4
    assert (meta["chunk_retries"], meta["validation_errors"]) == (2, 2)
    assert meta["model_seconds"] == 4 * 0.25  # each call took one tick of the timer
    assert meta["input_tokens"] == 0 == meta["output_tokens"]  # the rules use no model


def test_a_clean_run_reports_no_retries_and_no_validation_errors(engine: Engine) -> None:
    chat(engine, 6)

    report = runner(engine, Recording(engine)).run(REF, owner="run-1")

    meta = report.metadata()
    assert (meta["chunks"], meta["evidence_per_chunk"], meta["model_calls"]) == (1, [6], 1)
    assert (meta["chunk_retries"], meta["validation_errors"]) == (0, 0)
    assert meta["model_seconds"] >= 0.0
