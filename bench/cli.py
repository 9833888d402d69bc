"""What every `python -m bench.<name>.run` shares: the rows file, the rows table, the exit code.

`python -m bench` runs each benchmark as a child process with `--rows FILE` and reads the rows
back, so a benchmark that crashes loses only its own figures. A child stopped for running too
long gets SIGTERM; turning that into SystemExit lets its `finally` blocks drop its database and
stop the servers it started.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from bench.table import BenchRow, exit_code, render_markdown, rows_to_json


def add_rows_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rows",
        type=Path,
        metavar="FILE",
        help="also write the figures as table rows (JSON) to FILE, for `python -m bench`",
    )


def exit_on_sigterm() -> None:
    def stop(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def finish(rows: Sequence[BenchRow], rows_file: Path | None, *, print_table: bool = True) -> int:
    """Print the rows (after the benchmark's own lines), write the rows file, give the exit code."""
    if print_table:
        print()
        print(render_markdown(rows), end="")
    if rows_file is not None:
        rows_file.write_text(rows_to_json(rows))
    sys.stdout.flush()
    return exit_code(rows)
