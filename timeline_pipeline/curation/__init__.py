"""Human curation of the timeline: confirm, hide, restore, edit and add entries, and write
the workspace summary. `rules` holds the pure transition and text rules, `service` applies
them to the database, `timeline` reads the curated view (with links back to Lark), and
`export` renders it as a postmortem document."""
