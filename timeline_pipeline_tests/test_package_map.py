"""docs/packages.md is rendered from the modules' own docstrings (`tools/render_packages.py`) and
carries the rendering verbatim, so a module added, moved or re-described cannot leave the map
behind, and the pure marks are the import-linter contract's."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tools.render_packages import (
    NO_DOCSTRING,
    REPO,
    ModuleEntry,
    module_entries,
    pure_modules,
    render_document,
)

MAP = REPO / "docs" / "packages.md"
REWRITE = "run `python -m tools.render_packages --write docs/packages.md`"


def _sections(document: str) -> dict[str, list[str]]:
    """The rows of each package's table, by the package's path (`timeline_pipeline/api/`)."""
    sections: dict[str, list[str]] = {}
    rows: list[str] = []
    for line in document.splitlines():
        if line.startswith("## `"):
            rows = sections.setdefault(line.removeprefix("## `").removesuffix("`"), [])
        elif line.startswith("| `"):
            rows.append(line)
    return sections


def _row(entry: ModuleEntry) -> str:
    summary = (entry.summary or NO_DOCSTRING).replace("|", "\\|")
    return f"| `{entry.label}` | {'pure' if entry.pure else ''} | {summary} |"


def test_the_document_is_exactly_the_rendered_map() -> None:
    document = MAP.read_text(encoding="utf-8")

    assert document == render_document(), f"docs/packages.md is stale: {REWRITE}"


def test_every_module_has_its_current_line_in_its_package() -> None:
    sections = _sections(MAP.read_text(encoding="utf-8"))
    missing: list[str] = []
    stale: list[str] = []
    for entry in module_entries():
        if entry.name == "timeline_pipeline":
            continue
        rows = sections.get(entry.package.replace(".", "/") + "/", [])
        mine = [row for row in rows if row.startswith(f"| `{entry.label}` |")]
        if not mine:
            missing.append(entry.name)
        elif mine != [_row(entry)]:
            stale.append(entry.name)

    assert not missing, f"modules missing from docs/packages.md: {missing}; {REWRITE}"
    assert not stale, f"modules whose line in docs/packages.md is stale: {stale}; {REWRITE}"


def test_every_module_says_why_it_exists() -> None:
    undocumented = {entry.name for entry in module_entries() if entry.summary is None}

    assert not undocumented, (
        f"modules without a docstring: {sorted(undocumented)}; give each a line saying why it "
        "exists"
    )


def test_the_pure_marks_are_the_contracts_modules_and_each_names_a_module() -> None:
    entries = module_entries()
    names = {entry.name for entry in entries}
    pure = pure_modules()

    assert not [name for name in pure if name not in names], "a pure module that does not exist"
    assert {entry.name for entry in entries if entry.pure} == {
        entry.name
        for entry in entries
        if any(entry.name == p or entry.name.startswith(f"{p}.") for p in pure)
    }
    assert next(e for e in entries if e.name == "timeline_pipeline.windows.run_queue").pure
    assert not next(e for e in entries if e.name == "timeline_pipeline.windows.health").pure


CALLS_ITSELF_PURE = re.compile(r"(?<![\w`(])Pure[.:]")
"""A docstring that says of its module "Pure." or "Pure: values in, text out"."""


def test_a_module_that_calls_itself_pure_is_held_to_it_by_the_contract() -> None:
    claims = [
        entry.name
        for entry in module_entries()
        if not entry.pure
        and CALLS_ITSELF_PURE.search(
            ast.get_docstring(ast.parse((REPO / entry.path).read_text(encoding="utf-8"))) or ""
        )
    ]

    assert not claims, (
        f"modules whose docstring says they are pure but the import-linter contract "
        f"'pure logic does no I/O' does not hold them: {claims}; add them to its source_modules "
        "in pyproject.toml, or say what they are instead (no I/O of their own)"
    )


def test_a_tree_renders_by_package_with_its_pure_and_undocumented_modules(tmp_path: Path) -> None:
    package = tmp_path / "timeline_pipeline"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text('"""The root.\n\nMore."""\n')
    (package / "inner" / "__init__.py").write_text("")
    (package / "inner" / "calm.py").write_text('"""Decides,\nwith no I/O | none."""\n')
    (package / "inner" / "loud.py").write_text("import os\n")
    (tmp_path / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [[tool.importlinter.contracts]]
            name = "pure logic does no I/O: whatever"
            source_modules = ["timeline_pipeline.inner.calm"]
            """
        )
    )

    document = render_document(module_entries(tmp_path))

    assert "## `timeline_pipeline/`\n\nThe root.\n" in document
    assert f"| `inner/` |  | {NO_DOCSTRING} |" in document
    assert "| `calm.py` | pure | Decides, with no I/O \\| none. |" in document
    assert f"| `loud.py` |  | {NO_DOCSTRING} |" in document


def test_rendering_imports_no_module_of_the_product() -> None:
    script = (
        "import sys; from tools.render_packages import render_document; render_document(); "
        "print(sorted(m for m in sys.modules if m.startswith('timeline_pipeline')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True
    )

    assert result.stdout.strip() == "[]"
