"""Developer tools that produce the repository's data; not part of the installed package.

`python -m tools.generate_demo_chat` rewrites the bundled demo chat in
`timeline_pipeline/demo_data/` (README "Architecture"); `python -m tools.render_packages --write
docs/packages.md` renders the package map from the modules' docstrings.
"""
