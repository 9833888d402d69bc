"""Run every benchmark and write one table: figure, same-run baseline, ratio, target, met.

    python -m bench [--quick] [--only ingest,reconcile] [--output bench/results/latest.md]
                    [--timeout 1800] [--note TEXT]

Each benchmark runs as `python -m bench.<name>.run` in its own process against its own fresh
PostgreSQL database (127.0.0.1:5432 unless TIMELINE_BENCH_PG_URL says otherwise). Their output
goes to stderr as it comes; the results document (date, command, machine, the table, what
missed and why) goes to stdout and to the output file.

Exit status: 0 every target met, 1 a target missed, 2 bad usage, 3 a benchmark gave no figures
(crashed or timed out; its row says so and the other benchmarks' figures are still written).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from datetime import UTC, datetime
from pathlib import Path

from bench import machine, runner
from bench.report import all_rows, render_report
from bench.table import exit_code

DEFAULT_OUTPUT = runner.ROOT / "bench" / "results" / "latest.md"


def main(argv: list[str] | None = None) -> int:
    args_list = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=(__doc__ or "").split("\n\n")[0],
        epilog=(__doc__ or "").split("\n\n")[-1],
    )
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run")
    parser.add_argument(
        "--only",
        default="",
        metavar="NAMES",
        help=f"comma-separated subset of: {', '.join(b.name for b in runner.BENCHMARKS)}",
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="results file")
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds each benchmark may take"
    )
    parser.add_argument(
        "--note", action="append", default=[], help="a line for the results' notes (repeatable)"
    )
    args = parser.parse_args(args_list)
    try:
        benchmarks = runner.select([n.strip() for n in args.only.split(",") if n.strip()])
    except ValueError as exc:
        parser.error(str(exc))
    if args.timeout <= 0:
        parser.error("--timeout must be positive")

    started = datetime.now(UTC)
    facts = machine.gather()
    outcomes = runner.run_all(benchmarks, quick=args.quick, timeout=args.timeout)
    report = render_report(
        outcomes,
        facts,
        command=shlex.join(["python", "-m", "bench", *args_list]),
        started=started,
        quick=args.quick,
        notes=args.note,
    )
    print(report, end="")
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(report)
    print(f"written to {args.output}", file=sys.stderr)
    return exit_code(all_rows(outcomes))


if __name__ == "__main__":
    raise SystemExit(main())
