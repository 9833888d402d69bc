"""Which packages the distribution holds; everything else about it is in pyproject.toml.

The alembic scripts stay in the repository's top-level `migrations/` folder, where `alembic`
and the README's layout keep them, and ship inside the package as `timeline_pipeline.migrations`,
so that an installed wheel migrates a database without the source tree (docs/packaging.md).
pyproject.toml's package discovery cannot map a folder outside the package into it, hence this
file: the same discovery as before, plus that one mapping.
"""

from setuptools import find_namespace_packages, setup

MIGRATIONS = "timeline_pipeline.migrations"

setup(
    packages=[
        *find_namespace_packages(include=["timeline_pipeline*"]),
        MIGRATIONS,
        f"{MIGRATIONS}.versions",
    ],
    package_dir={MIGRATIONS: "migrations"},
)
