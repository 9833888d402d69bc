"""Window synthesis: turn one window's chat evidence into draft timeline entries.

Pure core (no I/O): `contract` (what a synthesizer is given and answers), `token_estimate`,
`chunking`, `grouping`, `text`, `lexicon`, `classify` and `rules` (the deterministic
synthesizer). At the edge: `prompt` and
`claude` (the Messages API synthesizer). `gold` and `evaluation` score a synthesizer against
hand-written timelines. Nothing is re-exported here, so that importing the pure core never
pulls in the Anthropic SDK.
"""
