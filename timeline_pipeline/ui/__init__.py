"""The curators' timeline page and its report view, served under `/ui` (docs/timeline-page.md).

Routers read and write through the curation and report services; what a page shows is computed
by the pure view modules and rendered by Jinja2 templates in the workspace's language.
"""
