"""What a person reads, in the workspace's language and time zone (docs/i18n.md).

`locales` (pure) names the languages the product speaks and reads a chat's majority script;
`times` (pure) shows a stored UTC moment in a workspace's zone; `catalogs` compiles the gettext
catalogs shipped under `locale/` with Babel. Every surface a person reads (the page, review cards,
pin replies, the summary, the Markdown export) takes a `Presentation` and its translations.
"""
