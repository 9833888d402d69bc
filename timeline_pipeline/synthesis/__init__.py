"""Window synthesis: turn one window's chat evidence into draft timeline entries.

Pure core (no I/O): `contract` (what a synthesizer is given and answers), `token_estimate`,
`chunking`, `grouping`, `text`, `lexicon` and `lexicon_zh` (the cue tables), `classify` and
`rules` (the deterministic synthesizer), `category_features` and `category_model` (the rules'
fitted second opinion on a fact's kind). `segment` splits Chinese into words (jieba). At the
edge: `prompt` and `claude` (the Messages API synthesizer). The gold set and the harness that
scores a synthesizer against hand-written timelines are in `bench/quality/` (`gold`,
`evaluation`). Nothing is re-exported here, so that importing the pure core never pulls in the
Anthropic SDK.
"""
