"""The rule synthesizer: what counts as a timeline fact in incident chat, what is noise, and when
several messages are one fact. Sentences here are general incident language, deliberately not
taken from the gold transcripts."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timeline_pipeline.synthesis.chunking import plan_chunks
from timeline_pipeline.synthesis.classify import MessageKind, read_message
from timeline_pipeline.synthesis.contract import Category, EvidenceItem, SynthesisChunk
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence

FACTS = [
    ("impact", "Customers in APAC cannot log in to the dashboard"),
    ("impact", "about 20% of API calls are failing with 502 since 09:40"),
    ("impact", "Merchants report that payouts are stuck in pending"),
    ("impact", "search is returning empty results for all users"),
    ("impact", "we're losing roughly 300 orders per minute"),
    ("impact", "Several enterprise tenants report that exports time out"),
    ("impact", "the public status API is down for everyone"),
    ("finding", "the kafka consumer lag on billing-events is at 2M messages and climbing"),
    ("finding", "logs show OOMKilled on every ingest-worker pod"),
    ("finding", "seeing connection resets from the redis cluster, started around 09:12"),
    ("finding", "cert on api.example.com expired at 00:00 UTC"),
    ("finding", "the new config sets max_pool_size to 5 instead of 50"),
    ("finding", "p99 latency on the gateway jumped from 200ms to 4s"),
    ("finding", "traces point to a slow query on the invoices table, 12s per call"),
    ("finding", "DNS lookups for internal.svc are failing intermittently from the eu-west nodes"),
    ("decision", "decision: we freeze all deploys until the fix is verified"),
    ("decision", "I'm taking incident command, Bob owns comms"),
    ("decision", "we're going to drain us-east-1 and serve from us-west-2"),
    ("decision", "let's roll back the config change"),
    ("decision", "We will keep the feature disabled over the weekend"),
    ("decision", "Going with option 2: fail over to the secondary region"),
    ("decision", "Alice is incident commander from now on"),
    ("mitigation", "scaled the ingest workers from 10 to 30 replicas"),
    ("mitigation", "restarted the redis primary"),
    ("mitigation", "reverted PR 1234, deploy is rolling out"),
    ("mitigation", "traffic shifted to us-west-2"),
    ("mitigation", "disabled the recommendations feature flag"),
    ("mitigation", "renewed the certificate and reloaded nginx"),
    ("mitigation", "rolled the canary back to 5.3.1"),
    ("mitigation", "added an index on invoices(customer_id)"),
    ("mitigation", "purged the CDN cache for /static"),
    ("root_cause", "root cause is a memory leak in the json parser introduced in 3.2"),
    ("root_cause", "the outage was caused by an expired TLS certificate"),
    ("root_cause", "the culprit is a cron job that truncates the sessions table"),
    ("root_cause", "this was triggered by a certificate rotation that missed the internal LB"),
    ("recovery", "latency is back to normal"),
    ("recovery", "all consumers caught up, lag is zero"),
    ("recovery", "login works again for APAC users"),
    ("recovery", "error rate has been stable below 0.1% for 30 minutes"),
    ("recovery", "verified checkout end to end, all good"),
    ("recovery", "exports are completing normally again"),
    ("recovery", "payments success rate back to 99.2%"),
    ("recovery", "we can close this, everything is green"),
    ("next_step", "we need to add an alert on certificate expiry"),
    ("next_step", "action item: load test the parser before the next release"),
    ("next_step", "follow-up: write a runbook for regional failover"),
    ("next_step", "TODO: document the WAF rule and who approved it"),
    ("impact", "our EU shoppers are seeing timeouts at checkout"),
    ("impact", "new signups are broken on android"),
    ("finding", "memory on the cache nodes is at 95%"),
    ("finding", "we see 429s from the geocoding vendor in the logs"),
    ("decision", "plan: we pause the billing run until finance signs off"),
    ("decision", "Priya will own the customer communication from here"),
    ("mitigation", "failed over the primary to db-2"),
    ("mitigation", "bumped the connection pool to 200"),
    ("mitigation", "rate-limited the scraper's IP range at the edge"),
    ("root_cause", "looks like this was caused by the cache eviction change in yesterday's deploy"),
    ("recovery", "checkout is healthy again"),
    ("recovery", "confirmed fixed on android"),
    ("next_step", "follow up: ask the vendor for an RCA"),
]

NOISE = [
    "ack",
    "on it",
    "looking",
    "thanks!",
    "+1",
    "ok",
    "👍",
    "I'm here",
    "will check in 5",
    "who is on call for payments?",
    "did anyone check the logs?",
    "any update?",
    "https://grafana.example.com/d/abc",
    "dashboard: https://grafana.example.com/d/abc",
    "link to the doc https://docs.example.com/x",
    "lol classic monday",
    "good morning all",
    "brb, grabbing a coffee",
    "sorry, my internet dropped",
    "I'll grab pizza for everyone",
    "can we do the retro on Wednesday at 2pm?",
    "joining the call now",
    "moving this to the war room channel",
    "[FIRING] HighErrorRate api-gateway severity: critical | runbook: x",
    "[RESOLVED] HighLatency search severity: warning | runbook: search",
    "thanks for the quick fix everyone",
    "let me grab the graphs",
    "back in 5",
    "here's the runbook https://wiki.example.com/rb",
]


def _chunk(items: list[EvidenceItem]) -> SynthesisChunk:
    [chunk] = plan_chunks(WINDOW_START, WINDOW_END, items)
    return chunk


def _entries(*items: EvidenceItem) -> list[tuple[str, list[int]]]:
    result = RuleSynthesizer().synthesize(_chunk(list(items)))
    return [(entry.category.value, entry.evidence_ids) for entry in result.entries]


@pytest.mark.parametrize(("category", "text"), FACTS)
def test_recognises_incident_facts(category: str, text: str) -> None:
    reading = read_message(evidence(1, text))
    assert reading.kind is MessageKind.FACT
    assert reading.category == Category(category)


@pytest.mark.parametrize("text", NOISE)
def test_ignores_acknowledgements_chatter_links_and_alerts(text: str) -> None:
    assert read_message(evidence(1, text)).kind is not MessageKind.FACT


@pytest.mark.parametrize("message_type", ["interactive", "system", "image", "file", "sticker"])
def test_ignores_non_prose_messages_whatever_they_say(message_type: str) -> None:
    item = evidence(
        1, "rolled back the deploy, error rate back to normal", message_type=message_type
    )
    assert read_message(item).kind is MessageKind.NOISE


def test_a_window_of_chatter_produces_no_entry() -> None:
    items = [evidence(i, text, at=i * 20) for i, text in enumerate(NOISE, start=1)]
    assert _entries(*items) == []


def test_result_records_the_synthesizer_and_costs_no_tokens() -> None:
    result = RuleSynthesizer().synthesize(_chunk([evidence(1, "restarted the redis primary")]))
    assert (result.model, result.prompt_version) == ("rules", "rules-v7")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (0, 0)


def test_titles_are_clean_sentences() -> None:
    item = evidence(
        1, "@Dana Smith ok so we restarted the redis primary https://grafana.example.com/d/x"
    )
    [entry] = RuleSynthesizer().synthesize(_chunk([item])).entries
    assert entry.title == "We restarted the redis primary"


def test_long_messages_get_a_bounded_title_and_keep_the_time_of_the_message() -> None:
    item = evidence(1, "restarted the redis primary " + "and then some more words " * 40, at=42)
    [entry] = RuleSynthesizer().synthesize(_chunk([item])).entries
    assert len(entry.title) <= 120
    assert entry.title.endswith("…")
    assert entry.occurred_at == item.occurred_at


# --- one fact, several messages ------------------------------------------------------------


def test_a_request_and_its_confirmation_are_one_action() -> None:
    assert _entries(
        evidence(1, "Sam, please disable the bulk import job", actor="ou_ic", at=0),
        evidence(2, "bulk import job disabled", actor="ou_sam", at=40),
    ) == [("mitigation", [1, 2])]


def test_progress_reports_on_one_action_are_one_action() -> None:
    assert _entries(
        evidence(1, "rolling back the gateway now", at=0),
        evidence(2, "p99 latency on the gateway is at 3s", actor="ou_bob", at=30),
        evidence(3, "rollback 50% done", at=90),
        evidence(4, "rollback finished", at=150),
    ) == [("mitigation", [1, 3, 4]), ("finding", [2])]


def test_different_actions_stay_apart() -> None:
    assert _entries(
        evidence(1, "restarted the redis primary", at=0),
        evidence(2, "purged the CDN cache for /static", at=30),
    ) == [("mitigation", [1]), ("mitigation", [2])]


def test_consecutive_status_statements_are_one_state() -> None:
    assert _entries(
        evidence(1, "customers can't check out", at=0),
        evidence(2, "about 30% of payment requests are failing", actor="ou_bob", at=60),
    ) == [("impact", [1, 2])]


def test_status_statements_far_apart_are_separate() -> None:
    assert _entries(
        evidence(1, "error rate is improving", at=0),
        evidence(2, "latency is back to normal", at=400),
    ) == [("recovery", [1]), ("recovery", [2])]


def test_a_go_ahead_turns_an_offer_into_a_decision() -> None:
    assert _entries(
        evidence(1, "I can fail the queue over to the standby cluster", actor="ou_sam", at=0),
        evidence(2, "do it", actor="ou_ic", at=20),
    ) == [("decision", [1, 2])]


def test_an_offer_nobody_accepts_is_not_a_fact() -> None:
    assert _entries(evidence(1, "I can fail the queue over to the standby cluster")) == []


def test_a_go_ahead_with_nothing_to_approve_is_an_acknowledgement() -> None:
    assert _entries(evidence(1, "go ahead")) == []


def test_people_claiming_follow_ups_belong_to_the_follow_up_list() -> None:
    assert _entries(
        evidence(1, "follow-ups: 1) alert on cert expiry 2) runbook for failover", at=0),
        evidence(2, "I'll take 1", actor="ou_bob", at=30),
        evidence(3, "2 is mine", actor="ou_sam", at=60),
    ) == [("next_step", [1, 2, 3])]


def test_an_answer_from_someone_else_elaborates_the_finding_it_replies_to() -> None:
    assert _entries(
        evidence(1, "half of the ingest pods are in CrashLoopBackOff", actor="ou_a", at=0),
        evidence(
            2, "they hit the 512Mi memory limit", actor="ou_b", at=30, parent="om_1", root="om_1"
        ),
    ) == [("finding", [1, 2])]


def test_a_reply_to_oneself_adds_a_separate_finding() -> None:
    assert _entries(
        evidence(1, "half of the ingest pods are in CrashLoopBackOff", actor="ou_a", at=0),
        evidence(
            2, "the replica set is healthy, lag 2s", actor="ou_a", at=30, parent="om_1", root="om_1"
        ),
    ) == [("finding", [1]), ("finding", [2])]


def test_a_conclusion_restated_in_another_conversation_is_folded_in() -> None:
    assert _entries(
        evidence(1, "root cause: the cron job truncated the sessions table", at=0, thread="omt_a"),
        evidence(2, "ok", at=30),
        evidence(3, "so the root cause is that cron job truncating sessions", actor="ou_ic", at=60),
    ) == [("root_cause", [1, 3])]


def test_two_readings_of_a_metric_are_two_facts() -> None:
    assert _entries(
        evidence(1, "success rate back to 85%", at=0, thread="omt_a"),
        evidence(2, "success rate back to 99%", at=200, thread="omt_b"),
    ) == [("recovery", [1]), ("recovery", [2])]


# --- properties ----------------------------------------------------------------------------

_any_text = st.sampled_from([text for _, text in FACTS] + NOISE)


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(_any_text, min_size=1, max_size=40), threads=st.data())
def test_every_entry_cites_chunk_evidence_at_most_once_and_output_is_deterministic(
    texts: list[str], threads: st.DataObject
) -> None:
    items = [
        evidence(
            i,
            text,
            at=i * 10,
            actor=threads.draw(st.sampled_from(["ou_a", "ou_b"])),
            thread=threads.draw(st.sampled_from([None, "omt_1", "omt_2"])),
        )
        for i, text in enumerate(texts, start=1)
    ]
    chunk = _chunk(items)
    first = RuleSynthesizer().synthesize(chunk)
    assert first == RuleSynthesizer().synthesize(chunk)
    cited = [i for entry in first.entries for i in entry.evidence_ids]
    assert len(cited) == len(set(cited))
    assert set(cited) <= {item.id for item in items}
