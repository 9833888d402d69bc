"""The installable product (docs/packaging.md): a wheel built from the repository, installed
into a fresh virtual environment outside it, migrates SQLite and PostgreSQL and serves, with no
source tree in sight.

The wheel is built offline from a copy of the working tree, with the build backend already
installed (`--no-build-isolation`), so the test neither fetches anything nor writes into the
repository. The new environment gets the wheel alone; its third-party dependencies come from
this environment's site-packages through a `.pth` line, which adds that folder to the path
without running its own `.pth` files, so this environment's editable `timeline_pipeline` stays
invisible there. The test checks that the package it runs is the installed copy.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import httpx
import pytest

from timeline_pipeline.db.engine import make_engine
from timeline_pipeline.db.migrate import current_revision, head_revision
from timeline_pipeline_tests.faults.support_serve import LarkApp, ServeProcess

REPOSITORY: Final = Path(__file__).resolve().parents[1]
STEP_SECONDS: Final = 300.0
"""Per subprocess; each takes seconds, but a loaded CI machine imports slowly."""
NOT_SOURCE: Final = shutil.ignore_patterns(
    ".git",
    ".venv",
    "__pycache__",
    "*.pyc",
    "*.egg-info",
    "build",
    "dist",
    ".timeline",
    ".*_cache",
    ".hypothesis",
    ".dagster_home",
    "tmp*",
)


@dataclass(frozen=True)
class Installed:
    """A virtual environment holding the built wheel; `home` is a folder outside the repository."""

    wheel: Path
    venv: Path
    home: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def cli(self) -> Path:
        return self.venv / "bin" / "timeline-pipeline"

    def environment(self, **values: str) -> dict[str, str]:
        """The caller's environment without the project's settings, PYTHONPATH or venv."""
        kept = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("TIMELINE_", "LARK_", "ANTHROPIC_"))
            and key not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
        }
        return {**kept, **values}

    def run(self, *args: str, **values: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(arg) for arg in args],
            cwd=self.home,
            env=self.environment(**values),
            capture_output=True,
            text=True,
            timeout=STEP_SECONDS,
            check=False,
        )


def _check(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr[-2000:]}"
    return result.stdout


def _build_wheel(workdir: Path) -> Path:
    source = workdir / "source"
    shutil.copytree(REPOSITORY, source, ignore=NOT_SOURCE)
    out = workdir / "dist"
    _check(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "--disable-pip-version-check",
                "--quiet",
                "--wheel-dir",
                str(out),
                str(source),
            ],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=STEP_SECONDS,
            check=False,
        )
    )
    wheels = list(out.glob("timeline_pipeline-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _install(wheel: Path, venv: Path) -> None:
    _check(
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            capture_output=True,
            text=True,
            timeout=STEP_SECONDS,
            check=False,
        )
    )
    _check(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(venv / "bin" / "python"),
                "install",
                "--no-deps",
                "--no-index",
                "--disable-pip-version-check",
                "--quiet",
                str(wheel),
            ],
            capture_output=True,
            text=True,
            timeout=STEP_SECONDS,
            check=False,
        )
    )
    # The dependencies: this environment's third-party packages, appended after the venv's own.
    site = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    (site / "_project_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    workdir = tmp_path_factory.mktemp("packaging")
    assert not workdir.is_relative_to(REPOSITORY)
    wheel = _build_wheel(workdir)
    _install(wheel, workdir / "venv")
    home = workdir / "home"
    home.mkdir()
    return Installed(wheel, workdir / "venv", home)


def _product_files() -> set[str]:
    """Every file the product reads at run time that is not a Python module, as the wheel
    should name it: the package's data, and the top-level migrations as the package's own."""
    found = {
        path.relative_to(REPOSITORY).as_posix()
        for path in (REPOSITORY / "timeline_pipeline").rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"}
    }
    found |= {
        "timeline_pipeline/migrations/" + path.relative_to(REPOSITORY / "migrations").as_posix()
        for path in (REPOSITORY / "migrations").rglob("*")
        if path.is_file() and path.suffix != ".pyc"
    }
    return found


@pytest.mark.slow
def test_the_wheel_holds_every_file_the_product_reads_and_the_migrations(
    installed: Installed,
) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        names = set(wheel.namelist())
    wanted = _product_files()
    assert {
        "timeline_pipeline/migrations/env.py",
        "timeline_pipeline/migrations/script.py.mako",
        "timeline_pipeline/synthesis/category_model.json",
        "timeline_pipeline/demo_data/incident_chat.jsonl",
        "timeline_pipeline/ui/templates/page.html",
        "timeline_pipeline/ui/static/ui.css",
    } <= wanted
    assert sorted(wanted - names) == []
    versions = {name for name in names if name.startswith("timeline_pipeline/migrations/versions/")}
    assert len(versions) == len(list((REPOSITORY / "migrations" / "versions").glob("*.py")))


@pytest.mark.slow
def test_the_installed_package_runs_from_the_venv_not_the_repository(
    installed: Installed,
) -> None:
    out = _check(
        installed.run(
            installed.python,
            "-c",
            "import timeline_pipeline, timeline_pipeline.db.migrate as m;"
            "print(timeline_pipeline.__file__); print(m.migrations_dir())",
        )
    )
    package, scripts = (Path(line) for line in out.split())
    assert package.is_relative_to(installed.venv)
    assert scripts.is_relative_to(installed.venv)
    assert not package.is_relative_to(REPOSITORY)


@pytest.mark.slow
@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_installed_cli_migrates_a_fresh_database(
    installed: Installed, dialect: str, request: pytest.FixtureRequest
) -> None:
    if dialect == "sqlite":
        url = f"sqlite:///{installed.home / f'upgrade-{os.getpid()}.db'}"
    else:
        url = str(request.getfixturevalue("empty_db_url"))

    out = _check(installed.run(installed.cli, "db", "upgrade", TIMELINE_DATABASE_URL=url))

    assert head_revision() in out
    engine = make_engine(url, null_pool=True)
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()


@pytest.mark.slow
def test_the_installed_cli_serves_health_and_the_page_assets(installed: Installed) -> None:
    url = f"sqlite:///{installed.home / 'serve.db'}"
    _check(installed.run(installed.cli, "db", "upgrade", TIMELINE_DATABASE_URL=url))
    app = LarkApp.fresh()

    with ServeProcess(app.runtime(url), installed.home, executable=installed.cli) as serve:
        serve.start()
        health = serve.health()
        css = httpx.get(f"{serve.base_url}/ui/static/ui.css", timeout=30, trust_env=False)

    assert health == (200, {"status": "ok", "database": "ok"})
    assert css.status_code == 200
    assert css.text == (REPOSITORY / "timeline_pipeline" / "ui" / "static" / "ui.css").read_text()
