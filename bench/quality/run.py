"""Rule-synthesizer quality and model-call cost on the gold transcripts and a held-out chat.

    python -m bench.quality.run [--json] [--window-minutes 10] [--max-count 40] [--max-tokens N]
                                [--rows FILE]

Prints, per transcript and overall, precision and recall of the expected timeline facts, the
number of model calls the chunking would make (one per chunk) and the estimated prompt tokens,
next to what one call per message would cost. The token figures are offline estimates
(characters / 3.5 plus per-message overhead plus the fixed system prompt and tool schema).

Two sets are reported separately. The gold transcripts (`timeline_pipeline_tests/data/gold/`)
are the ones the rules were developed against, so their figures flatter the rules. The bundled
demo chat (`timeline_pipeline.demo_data`) was written independently of the rules and is the
held-out set: its timeline is the one a newcomer reads first. Rule changes made after looking at
its misses must be general incident language (checked on the gold set and on the synthetic
sentences in `timeline_pipeline_tests/synthesis/test_rule_patterns.py`), never its wording.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path

from bench.cli import add_rows_option, finish
from bench.table import BenchRow, Target, measured
from timeline_pipeline.demo_data import load_expected_facts, load_messages
from timeline_pipeline.synthesis.chunking import ChunkLimits
from timeline_pipeline.synthesis.evaluation import Score, produced_facts, run_windows, score
from timeline_pipeline.synthesis.gold import (
    GoldTranscript,
    load_gold_set,
    transcript_from_records,
)
from timeline_pipeline.synthesis.prompt import SYSTEM_PROMPT, tool_input_schema
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis.tokens import estimate_evidence_tokens, estimate_text_tokens

GOLD_ROOT = Path(__file__).resolve().parents[2] / "timeline_pipeline_tests" / "data" / "gold"
HELD_OUT_NAME = "demo_incident_chat"
# The bars that timeline_pipeline_tests/synthesis/test_gold_quality.py holds the rules to.
MIN_PRECISION = 0.8
MIN_RECALL = 0.8
TRANSCRIPT_SLACK = 0.1
"""No single gold transcript may fall more than this below the bar."""
HELD_OUT_MIN_PRECISION = 0.6
HELD_OUT_MIN_RECALL = 0.6


def load_held_out() -> list[GoldTranscript]:
    """The held-out set: the bundled demo chat and its hand-written timeline."""
    return [transcript_from_records(HELD_OUT_NAME, load_messages(), load_expected_facts())]


@dataclass(frozen=True)
class Row:
    transcript: str
    messages: int
    evidence: int
    expected: int
    produced: int
    matched: int
    precision: float
    recall: float
    windows: int
    model_calls: int
    estimated_tokens: int
    per_message_calls: int
    per_message_estimated_tokens: int


def _fixed_prompt_tokens() -> int:
    """What every call pays regardless of evidence: the system prompt and the tool schema."""
    return estimate_text_tokens(SYSTEM_PROMPT) + estimate_text_tokens(
        json.dumps(tool_input_schema())
    )


def _row(transcript: GoldTranscript, window: timedelta, limits: ChunkLimits) -> Row:
    run = run_windows(transcript.evidence, RuleSynthesizer(), window=window, limits=limits)
    result = score(
        produced_facts(run.entries, transcript.message_id_by_evidence_id()), transcript.expected
    )
    fixed = _fixed_prompt_tokens()
    windows = {chunk.window_start for chunk in run.chunks}
    return Row(
        transcript=transcript.name,
        messages=transcript.message_count,
        evidence=len(transcript.evidence),
        expected=result.expected,
        produced=result.produced,
        matched=result.matched,
        precision=round(result.precision, 3),
        recall=round(result.recall, 3),
        windows=len(windows),
        model_calls=len(run.chunks),
        estimated_tokens=run.estimated_prompt_tokens + fixed * len(run.chunks),
        per_message_calls=len(transcript.evidence),
        per_message_estimated_tokens=sum(
            fixed + estimate_evidence_tokens(item) for item in transcript.evidence
        ),
    )


def _overall(rows: list[Row], label: str) -> Row:
    total = sum((Score(r.produced, r.expected, r.matched) for r in rows), Score(0, 0, 0))
    return Row(
        transcript=label,
        messages=sum(r.messages for r in rows),
        evidence=sum(r.evidence for r in rows),
        expected=total.expected,
        produced=total.produced,
        matched=total.matched,
        precision=round(total.precision, 3),
        recall=round(total.recall, 3),
        windows=sum(r.windows for r in rows),
        model_calls=sum(r.model_calls for r in rows),
        estimated_tokens=sum(r.estimated_tokens for r in rows),
        per_message_calls=sum(r.per_message_calls for r in rows),
        per_message_estimated_tokens=sum(r.per_message_estimated_tokens for r in rows),
    )


def _print_table(title: str, rows: list[Row]) -> None:
    header = (
        f"{'transcript':<22}{'msgs':>6}{'evid':>6}{'exp':>5}{'out':>5}{'hit':>5}"
        f"{'prec':>7}{'recall':>8}{'calls':>7}{'tokens':>9}{'1/msg calls':>13}{'1/msg tokens':>14}"
    )
    print(title)
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.transcript:<22}{r.messages:>6}{r.evidence:>6}{r.expected:>5}{r.produced:>5}"
            f"{r.matched:>5}{r.precision:>7.2f}{r.recall:>8.2f}{r.model_calls:>7}"
            f"{r.estimated_tokens:>9}{r.per_message_calls:>13}{r.per_message_estimated_tokens:>14}"
        )


def rows(gold: list[Row], held_out: list[Row]) -> list[BenchRow]:
    """Precision and recall against the bars the tests hold, and model calls and prompt tokens
    against one call per message (the baseline, computed on the same transcripts)."""
    *transcripts, gold_total = gold
    held = held_out[-1]
    table: list[BenchRow] = []
    for label, row, bar in (
        (f"gold set ({len(transcripts)} transcripts)", gold_total, (MIN_PRECISION, MIN_RECALL)),
        (
            "held-out demo chat",
            held,
            (HELD_OUT_MIN_PRECISION, HELD_OUT_MIN_RECALL),
        ),
    ):
        facts = f"{row.matched} of {row.expected} expected facts, {row.produced} produced"
        table.append(
            measured("quality", f"precision, {label}", row.precision, target=Target(">=", bar[0]))
        )
        table.append(
            measured(
                "quality", f"recall, {label}", row.recall, target=Target(">=", bar[1]), note=facts
            )
        )
    if transcripts:
        worst_p = min(transcripts, key=lambda r: r.precision)
        worst_r = min(transcripts, key=lambda r: r.recall)
        table.append(
            measured(
                "quality",
                "lowest precision of one gold transcript",
                worst_p.precision,
                target=Target(">=", round(MIN_PRECISION - TRANSCRIPT_SLACK, 3)),
                note=worst_p.transcript,
            )
        )
        table.append(
            measured(
                "quality",
                "lowest recall of one gold transcript",
                worst_r.recall,
                target=Target(">=", round(MIN_RECALL - TRANSCRIPT_SLACK, 3)),
                note=worst_r.transcript,
            )
        )
    every = [*transcripts, held]
    messages = sum(r.evidence for r in every)
    table.append(
        measured(
            "quality",
            f"model calls, gold + held-out ({messages} evidence rows)",
            sum(r.model_calls for r in every),
            "calls",
            baseline="one call per message",
            baseline_value=sum(r.per_message_calls for r in every),
            note=f"one call per chunk; {sum(r.windows for r in every)} windows",
        )
    )
    table.append(
        measured(
            "quality",
            "estimated prompt tokens, gold + held-out",
            sum(r.estimated_tokens for r in every),
            "tokens",
            baseline="one call per message",
            baseline_value=sum(r.per_message_estimated_tokens for r in every),
            note="offline estimate: characters / 3.5, message overhead, system prompt and tool",
        )
    )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.quality.run", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--gold", type=Path, default=GOLD_ROOT, help="gold transcripts directory")
    parser.add_argument("--window-minutes", type=int, default=10)
    parser.add_argument("--max-count", type=int, default=ChunkLimits().max_count)
    parser.add_argument("--max-tokens", type=int, default=ChunkLimits().max_estimated_tokens)
    add_rows_option(parser)
    args = parser.parse_args(argv)
    limits = ChunkLimits(max_count=args.max_count, max_estimated_tokens=args.max_tokens)
    window = timedelta(minutes=args.window_minutes)
    gold = [_row(t, window, limits) for t in load_gold_set(args.gold)]
    if not gold:
        print(f"no gold transcripts under {args.gold}", file=sys.stderr)
        return 2
    held_out = [_row(t, window, limits) for t in load_held_out()]
    gold.append(_overall(gold, "overall (gold)"))
    held_out.append(_overall(held_out, "overall (held-out)"))
    table = rows(gold, held_out)
    if args.json:
        report = {
            "gold": [asdict(r) for r in gold],
            "held_out": [asdict(r) for r in held_out],
            "rows": [row.to_json() for row in table],
        }
        print(json.dumps(report, indent=2))
    else:
        _print_table("GOLD (the rules were tuned against these transcripts)", gold)
        print()
        _print_table("HELD-OUT (the demo chat, written independently of the rules)", held_out)
    return finish(table, args.rows, print_table=not args.json)


if __name__ == "__main__":
    raise SystemExit(main())
