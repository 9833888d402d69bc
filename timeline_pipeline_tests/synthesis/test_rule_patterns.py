"""General incident-chat patterns the rule synthesizer reads (docs/design.md §7).

Every sentence here is written for this file, deliberately in the words of no particular chat:
the rules must recognise how on-call engineers write (past-tense actions on systems, causal and
decision language, business and support impact, recovery wording), and must leave alone what
is not a fact (questions, guesses, acknowledgements, status pings, progress pings, scheduling,
stakeholder comms, negated or merely requested actions).
"""

from __future__ import annotations

import time

import pytest

from timeline_pipeline.synthesis.category_model import default_category_model
from timeline_pipeline.synthesis.chunking import plan_chunks
from timeline_pipeline.synthesis.classify import MessageKind, impact_aspect, read_message
from timeline_pipeline.synthesis.contract import Category, EvidenceItem, SynthesisChunk
from timeline_pipeline.synthesis.rules import RuleSynthesizer
from timeline_pipeline.synthesis.text import keep_sentences, make_title
from timeline_pipeline_tests.synthesis.builders import WINDOW_END, WINDOW_START, evidence

WORTHY = [
    # impact: people, business numbers, support volume
    ("impact", "orders per minute are down 40% compared to last Tuesday's peak"),
    ("impact", "revenue is roughly $12k behind the usual hour"),
    ("impact", "several people saying they were logged out in the middle of a purchase"),
    ("impact", "we have 120 support tickets about failed transfers"),
    ("impact", "1,400 customers could not renew their subscription"),
    ("impact", "users never received the password reset email"),
    ("impact", "signups are falling off a cliff on the growth dashboard"),
    ("impact", "merchants in Brazil can't see their payouts since this morning"),
    ("impact", "we're dropping about 15% of inbound webhooks"),
    ("impact", "conversion on the mobile app fell by half"),
    ("impact", "about 8% of video uploads are failing in APAC"),
    ("impact", "drivers report they cannot accept rides"),
    ("impact", "bookings dropped 25% in the last half hour"),
    # finding: readings, changes, counts, timing, vendor confirmations
    ("finding", "p95 on the search-api went from 300ms to about 2s"),
    ("finding", "memcached cpu at 97% on every node"),
    ("finding", "lots of connection timeouts from the billing-worker"),
    ("finding", "3,200 threads blocked on the same lock in auth-svc"),
    ("finding", "the config change shipped 20 minutes before the first page"),
    ("finding", "max_connections is meant to be 500 on the replicas"),
    ("finding", "the vendor's support confirmed a partial outage in their eu region"),
    ("finding", "90 worker processes stuck in uninterruptible sleep on the ingest hosts"),
    ("finding", "queue latency for the mailer is way up since the deploy"),
    ("finding", "the kafka broker 3 disk is at 99%"),
    ("finding", "heap usage on the search nodes jumped to 31GB after the reindex"),
    ("finding", "DNS for api.internal resolves to the old load balancer"),
    ("finding", "the cert on the ingress expired two hours ago"),
    ("finding", "the ingest lag on topic clicks is 40 minutes and growing"),
    ("finding", "all of the 500s come from pods on node pool b"),
    ("finding", "the new release raised the default batch size from 100 to 5000"),
    # mitigation: past-tense and progressive actions on systems, completion reports
    ("mitigation", "killed the runaway analytics query on the primary"),
    ("mitigation", "terminated the long-running sessions on the replica"),
    ("mitigation", "restart of the api pods is done"),
    ("mitigation", "started the failover of the cache cluster"),
    ("mitigation", "failing over the primary to us-west now"),
    ("mitigation", "done, 48 duplicate payments refunded"),
    ("mitigation", "Sam, please restart the scheduler"),
    ("mitigation", "purged 40k stale jobs, the queue is at 300 now"),
    ("mitigation", "voided the 12 duplicate authorizations"),
    ("mitigation", "bumped the replica count of the render service to 12"),
    ("mitigation", "drained node-7 and cordoned it"),
    ("mitigation", "rolling back the helm release now"),
    ("mitigation", "scaled the consumer group from 6 to 24 instances"),
    ("mitigation", "flipped the kill switch for the recommendations service"),
    ("mitigation", "re-ran the failed payout batch"),
    ("mitigation", "blocked the abusive IP range at the WAF"),
    # decision: explicit labels, agreement with a go, "let's"
    ("decision", "Decision: we keep writes on the standby until the disk is replaced"),
    ("decision", "agreed, let's go with read-only mode for the catalog"),
    ("decision", "approved, go ahead with the cache purge"),
    ("decision", "we decided to pause the nightly batch"),
    ("decision", "let's fail over to the dr region"),
    ("decision", "we will not re-enable the job until the fix ships"),
    ("decision", "going with the hotfix instead of the rollback"),
    # root cause: causal language
    ("root_cause", "the crash loop was caused by a missing env var in the new image"),
    ("root_cause", "Root cause: the retry budget exceeded the client timeout"),
    ("root_cause", "the spike was due to a retry storm caused by the SDK's default backoff"),
    ("root_cause", "this is what broke it: the migration dropped the index"),
    # recovery: baselines, stopped errors, verification
    ("recovery", "error rate is at baseline again"),
    ("recovery", "checkout latency is back to where it was this morning"),
    ("recovery", "no new complaints for the last 20 minutes"),
    ("recovery", "test payments from three regions succeeded"),
    ("recovery", "the 502s stopped after the restart"),
    ("recovery", "latency is mostly back, p95 at 350ms"),
    ("recovery", "payouts are flowing again"),
    ("recovery", "queue depth back to zero"),
    ("recovery", "p99 has been stable at 120ms for 20 min"),
    ("recovery", "verified logins work again in all regions"),
    # next step: list headers and obligations
    ("next_step", "Follow-ups\n- canary stage for config deploys\n- alert on pool saturation"),
    ("next_step", "we should add a lint for timeout budgets"),
    ("next_step", "TODO: add a dashboard for webhook drops"),
    ("next_step", "action item: runbook for the dr failover, owner Kim"),
    ("next_step", "follow-up: add an alert on consumer lag"),
]

STRUCTURAL = [
    # Cues that do not depend on the incident's vocabulary: how the sentence is built.
    # root cause: "because" and "after" structures, Chinese causal markers
    (
        "root_cause",
        "the crash loop is because the sidecar reads a config key that no longer exists",
    ),
    ("root_cause", "ledger entries duplicated after the queue migration replayed the backlog"),
    ("root_cause", "根因: 证书自动续期脚本的 cron 被误删"),
    # decision: first-person plural commitments, taking the commander role
    ("decision", "we'll drain the warehouse region and serve from the other two"),
    ("decision", "marta IC, jun on the gateway"),
    ("decision", "决定: 暂停发布, 先回滚网关配置"),
    # mitigation: a terse completed action, progress with a count, Chinese completed action
    ("mitigation", "reissued the signing token and uploaded it to the vault"),
    ("mitigation", "quarantined the bad shard, 3 of 40 replicas moved"),
    ("mitigation", "migrating tenants to the new pool, 14/60 done"),
    ("mitigation", "网关配置已回滚到上一个版本"),
    # recovery: a bad metric back down, errors gone, Chinese recovery markers
    ("recovery", "gateway timeouts down to 0.1% after the revert"),
    ("recovery", "no more checksum errors in the importer"),
    ("recovery", "thumbnail jobs are completing normally again"),
    ("recovery", "支付成功率恢复到 99%"),
    # impact: a failure and a share, Chinese affected people
    ("impact", "webhook deliveries failing 27% across all regions"),
    ("impact", "卖家反馈无法上传商品图片, 已有 30 个工单"),
    # finding: a named system and a measurement; a change at a clock time
    ("finding", "ingest-worker-3 heap at 7.6gb, others around 2gb"),
    ("finding", "the billing-api config was changed at 09:12 by the terraform run"),
    # a bad metric down by a large factor, whatever it is called
    ("recovery", "consumer errors 46% -> 0.3%"),
    # an observation and its consequence in one message explain the incident
    ("root_cause", "配置上周被改成了 0ms. 所以每次请求都超时"),
    # the same structures with other subjects and verbs
    ("impact", "drivers report the app shows no rides since 18:40"),
    ("mitigation", "failed the primary over to us-west-2, took 90s"),
    ("mitigation", "the bad config is reverted on 40/40 hosts"),
    ("recovery", "NotReady cleared on every node"),
    ("recovery", "drivers confirm rides show up again"),
    ("decision", "plan is to restore from the 02:00 snapshot, go"),
    ("root_cause", "it broke because the migration dropped the index on orders.created_at"),
    # a failure and its reason, and saying that the explanation follows
    ("root_cause", "the workers stall because the token cache is never refreshed"),
    ("root_cause", "we know why the webhooks stopped, the signing secret was rotated"),
    ("root_cause", "so the chain is: a bad flag, a cold cache, then the retry storm"),
    # taking the incident, and "let's" with any verb of action
    ("decision", "IC: me for this one"),
    ("decision", "I'll coordinate the incident from here"),
    ("decision", "let's drain the eu pool and keep the us one serving"),
    # the author changing a setting, a change reaching a fleet, work reported finished
    ("mitigation", "I set the retry budget to 3 on the gateway"),
    ("mitigation", "the new limits were rolled out to all 24 brokers"),
    ("mitigation", "resync finished, 880 devices updated"),
    # a numbered change, at a time, doing something
    ("finding", "PR #5120 at 16:40 removed the retry on the publisher"),
    ("finding", "they released auth-proxy 2.7.1 at 03:15 with the new header parsing"),
    # a failure count falling to nothing, counted complaints with a qualifier
    ("recovery", "timeouts on the mailer went to zero after 10:02"),
    ("impact", "40 duplicate-charge complaints since noon"),
    # a measurement next to a social or scheduling word is still a measurement
    ("finding", "replication lag is 40ms, normal for a Sunday night"),
    # someone outside the team noticing, and unable to do their job
    ("impact", "Finance flagged that the payout export is blank, so they can't close the month"),
    # a measurement set against its baseline
    ("finding", "render time is 4 to 6 seconds per page against about 300ms last week"),
    # a reason put first explains a state; it reports no action
    ("root_cause", "Because the flag is off on that host, the importer has been paused since noon"),
    # in a long message, a clearly stated kind outranks the detail around it
    (
        "recovery",
        "the mailer is back to normal. I traced the retries to a 30s timeout on smtp-relay",
    ),
    # terse chat without apostrophes, and taking command in lower case
    ("decision", "ill ic. noor on the db, tomas on comms"),
    ("next_step", "ill put the batch size back to 500 tomorrow if it stays clean"),
    # settling the options just discussed
    ("decision", "ok hotfix only, no full rollback"),
    ("decision", "okay. cache ttl 5m now, leave the search cluster alone"),
    # what was learnt overturns what was assumed; the author owning the change that did it
    ("root_cause", "turns out the cron was copied from the staging chart with a 1m schedule"),
    ("root_cause", "my bad, I applied the quota to every namespace instead of just batch"),
    # a reading set against the usual, nothing bad over a span
    ("recovery", "p95 210ms, errors 0.05%, that's baseline"),
    ("recovery", "zero oom kills in the last 15 min"),
    # a share of user actions ending badly
    ("impact", "about 4% of checkouts ending on the generic error page"),
    # a clause that places the sentence in time before the action it reports
    ("mitigation", "while that deploys: raised the proxy read timeout to 8s"),
    ("mitigation", "done: limit raised to 2000 on the shared pool"),
    # what a release carried, a timing that matches, a setting and its value
    ("finding", "tls settings and the base image changed in the same release"),
    ("finding", "the spike lines up with the 11:20 config push"),
    ("finding", "the upstream idle timeout on the lb is 60s, the app keeps conns for 75s"),
    # measured values with the name after them, or in terse units
    ("finding", "6.4T used on kfk-3, 2.1T on the rest"),
    ("finding", "node-pool-b clocks 3m12s ahead of the others"),
    # Chinese: work finished, normal again, a rate falling to a value, agreeing to a course
    ("mitigation", "缓存清理 100% 完成, 所有节点都拿到新版本"),
    ("recovery", "用户反馈重新登录后都正常了"),
    ("recovery", "支付错误率 10:40 降到 0.3%"),
    ("decision", "同意, 先不扩容。小王改配置, 小李盯监控"),
    ("finding", "日志里 worker-7 一直在重试同一个 job"),
    # middle dots on one line are a person's shorthand, not a dashboard integration
    ("mitigation", "rolled back checkout-svc to v41 · errors 38% -> 0.2% · p99 180ms"),
    # a roster post: one line per role, each with its person, the commander among them
    ("decision", "Roles for this one\nIC: @Marta Lopez\nOps: @Jun Park\nComms: @Kim Lee"),
    # pointing back after the explanation, in the same message, explains
    ("root_cause", "the retry budget is 30s per call. that's why the pool runs dry"),
]

STRUCTURAL_NOT_FACTS = [
    # alternatives side by side are options, not an action
    "we can restart the pool, or wait for the vendor to fix it",
    # a role label with its name removed
    "IC: @Marta Lopez",
    # talking to customers is comms, not an incident decision
    "we'll answer the tickets with the usual template",
    # a condition: the errors are not gone yet
    "hold off until the 5xx is gone",
    # "again" in a reason or a condition is not the recovery itself
    "before anyone consumes again the group rebalances",
    # integrations posting under a user account, and generated reports
    "[Tracker] OPS-311 moved to In Progress by Dana",
    "Build #4410 payments-api to staging: failed",
    "Weekly cost report: compute 41k, storage 12k",
    "Status update: Component 'Login' changed from Operational to Partial Outage.",
    # a failed attempt, and courses of action laid side by side
    "tried restarting the consumer, same error",
    "Options? rolling the flag back or pinning the old client",
    "we can drop the index in ten minutes; the alternative is to throttle writes",
    # talk about the talk, a recommendation not yet taken, a change told as history
    "let's keep it in this thread",
    "I think the safest path is to drain the node first",
    "we pinned the reports to the second replica last year",
    # a question without its mark, an "ok" that only looks or thanks, a quoted status line
    "sam can you write up the cause for the postmortem",
    "ok looking now",
    "ok thanks, checking the graphs first",
    "done: 'We have identified the issue and are working on a fix.'",
    # machine-formatted readings from a dashboard integration posting as a user
    "Snapshot · api-gw / Overview\np50 40ms · p99 900ms · 5xx 4.1%\nwindow: last 30m · by dashbot",
    # "ok now" with nothing settled after it
    "ok now looking at the grafana board for the api",
    "ok now the pager is quiet",
    # Chinese: work not finished, the negation a few characters before the verb
    "还没有完成迁移",
    # Chinese: a suggestion is an offer, work not done is no action, a complaint is not normal
    "建议先把流量切到备用集群",
    "清理还没完成",
]

NOT_WORTHY = [
    # questions and guesses
    "is the replica healthy?",
    "could it be the new load balancer?",
    "maybe the cache is cold",
    "if the queue keeps growing we will lose messages",
    "if requests hold a connection while they wait, that's what you'd expect",
    "could the new sdk be retrying too aggressively",
    "might be the cdn again",
    "I think it's the new sdk but not sure",
    "what's the blast radius?",
    # acknowledgements and agreement without content
    "ack, looking",
    "+1, matches what I see",
    "hi all, support here",
    # answering the page and taking the role, with nobody given anything to do
    "ok I'm on. I'll take IC",
    "here, I'll be IC",
    "on it. im IC",
    # pointing back at someone else's message: no subject and no action of its own
    "yep, that's why the retries pile up on the edge too",
    "right, that explains the 502s in the other region",
    "exactly, which is why search is slow as well",
    # running status: the value of something already being watched
    "p99 at 4s now",
    "error rate 12% now, worst so far",
    "200 chats so far",
    "ticket count 75",
    "lag 12 min now",
    "5xx at 3% now",
    # progress pings: the result is the fact, not the work
    "digging into the gateway logs",
    "checking the replica now",
    "grepping for the error in the worker code",
    "looking into why the pods restart",
    "still looking",
    "on it, give me 5 min",
    # scheduling and stakeholder comms
    "retro on wednesday works for me",
    "status page updated to monitoring",
    "Status page: Investigating\nSome customers may be unable to log in. Next update soon.",
    "for the exec update I'd say: two hours of degraded search",
    "no ETA yet, next update in 30 min",
    "I'll update the status page",
    "let's sync at 3pm",
    "joining the bridge",
    "let's keep watching for 15 min",
    "thanks all, great work",
    # actions that did not happen, or were only asked about or weighed
    "we never restarted the workers",
    "we didn't restart anything yet",
    "rollback is one click and puts us on yesterday's build",
    "options: roll back or patch forward",
    "hold off until the errors are gone",
    # alert hygiene and pointers at a paste
    "silenced the disk alert for an hour",
    "^ latency graph for the last hour",
]


def _chunk(items: list[EvidenceItem]) -> SynthesisChunk:
    [chunk] = plan_chunks(WINDOW_START, WINDOW_END, items)
    return chunk


def _entries(*items: EvidenceItem) -> list[tuple[str, list[int]]]:
    result = RuleSynthesizer().synthesize(_chunk(list(items)))
    return [(entry.category.value, entry.evidence_ids) for entry in result.entries]


@pytest.mark.parametrize("text", STRUCTURAL_NOT_FACTS)
def test_structural_cues_leave_options_labels_and_conditions_alone(text: str) -> None:
    assert read_message(evidence(1, text)).kind is not MessageKind.FACT


@pytest.mark.parametrize(("category", "text"), [*WORTHY, *STRUCTURAL])
def test_timeline_worthy_sentences_get_their_kind(category: str, text: str) -> None:
    reading = read_message(evidence(1, text))
    assert (reading.kind, reading.category) == (MessageKind.FACT, Category(category))


@pytest.mark.parametrize("text", NOT_WORTHY)
def test_sentences_without_a_new_fact_are_not_entries(text: str) -> None:
    assert read_message(evidence(1, text)).kind is not MessageKind.FACT


@pytest.mark.parametrize(
    "text",
    [
        "ok I'm on. I'll take IC",
        "on it, I'm IC",
        "yep, that's why the retries pile up on the edge too",
        "right, that explains the 502s in the other region",
    ],
)
def test_an_acknowledgement_or_an_agreement_is_no_decision_even_for_the_category_model(
    text: str,
) -> None:
    """The model gives a second opinion on a fact's kind; it never makes one of these a fact,
    least of all a decision (a decision names who does what, or the course chosen)."""
    reading = read_message(evidence(1, text), category_model=default_category_model())
    assert (reading.kind, reading.category) == (MessageKind.NOISE, None)


def test_taking_the_role_and_giving_out_work_stays_a_decision() -> None:
    for text in ("I'm IC. Ana on the db, Ruth on comms", "I've got IC", "ok, I'm IC for this"):
        reading = read_message(evidence(1, text), category_model=default_category_model())
        assert (reading.kind, reading.category) == (MessageKind.FACT, Category.DECISION), text


def test_a_roster_is_titled_with_the_people_it_names() -> None:
    text = "Roles for this one\nIC: @Marta Lopez\nOps: @Jun Park\nComms: @Kim Lee"
    reading = read_message(evidence(1, text))
    assert reading.title == "Roles for this one: IC: Marta Lopez; Ops: Jun Park; Comms: Kim Lee"


@pytest.mark.parametrize(
    ("text", "not_category"),
    [
        # an adjective or a negation is no action
        ("orders-db cpu at 31%, iops normal, no blocking locks", Category.MITIGATION),
        ("the handler never rolled back its transaction on timeout", Category.MITIGATION),
        ("the pool is not draining", Category.MITIGATION),
        ("blocking queries are piling up on the primary", Category.MITIGATION),
        ("rollback fix PR is up for review", Category.MITIGATION),
        # software clients are not customers
        ("our client timeout to the gateway is 10s", Category.IMPACT),
        ("14,000 GetItem calls from the sync role in the last hour", Category.IMPACT),
        # a prediction is no impact yet
        ("in-flight sessions will fail, maybe a few dozen people", Category.IMPACT),
        # a recovery named in a condition has not happened
        ("keep the flag off until errors are back to normal", Category.RECOVERY),
        # after a determiner a participle describes a thing, it reports no action
        ("the log on the restarted host says disk quota exceeded", Category.MITIGATION),
    ],
)
def test_lookalikes_are_not_read_as_the_kind_they_resemble(
    text: str, not_category: Category
) -> None:
    assert read_message(evidence(1, text)).category is not not_category


@pytest.mark.parametrize(
    ("text", "aspect"),
    [
        ("support has 40 tickets about failed logins", "reports"),
        ("customers saying they were charged twice", "reports"),
        ("orders/min down 30% against last week", "business"),
        ("revenue is $8k behind the same hour yesterday", "business"),
        ("15% of POST /login requests are failing", "service"),
    ],
)
def test_impact_is_seen_through_reports_business_numbers_or_the_service(
    text: str, aspect: str
) -> None:
    assert impact_aspect(text) == aspect


# --- one fact, several messages ------------------------------------------------------------


def test_one_person_splitting_an_observation_over_messages_is_one_finding() -> None:
    assert _entries(
        evidence(1, "6 of 10 api pods have their db pool at 50/50", actor="ou_a", at=0),
        evidence(2, "and 300 threads waiting on a connection there", actor="ou_a", at=20),
    ) == [("finding", [1, 2])]


def test_two_actions_in_a_row_by_one_person_are_two_actions() -> None:
    assert _entries(
        evidence(1, "flushed the session cache on all edge nodes", actor="ou_a", at=0),
        evidence(2, "disabling the recommendations widget", actor="ou_a", at=20),
    ) == [("mitigation", [1]), ("mitigation", [2])]


def test_two_actions_sharing_only_a_span_of_time_are_two_actions() -> None:
    assert _entries(
        evidence(1, "paused the export jobs for 10 minutes", actor="ou_a", at=0),
        evidence(2, "rebuilt the search shard, took 4 minutes", actor="ou_b", at=120),
    ) == [("mitigation", [1]), ("mitigation", [2])]


def test_taking_command_and_a_course_of_action_sharing_a_word_are_two_decisions() -> None:
    assert _entries(
        evidence(1, "I'm IC. Kai on search, Lu on billing", actor="ou_a", at=0),
        evidence(2, "we'll freeze billing deploys for today", actor="ou_a", at=90),
    ) == [("decision", [1]), ("decision", [2])]


def test_observations_far_apart_by_one_person_stay_apart() -> None:
    assert _entries(
        evidence(1, "6 of 10 api pods have their db pool at 50/50", actor="ou_a", at=0),
        evidence(2, "the replica set is healthy, replication lag 2s", actor="ou_a", at=240),
    ) == [("finding", [1]), ("finding", [2])]


def test_impacts_seen_in_different_places_are_different_impacts() -> None:
    assert _entries(
        evidence(1, "about 25% of POST /orders requests are failing", actor="ou_a", at=0),
        evidence(2, "support has 30 tickets from customers who can't pay", actor="ou_b", at=40),
    ) == [("impact", [1]), ("impact", [2])]


def test_impacts_seen_in_the_same_place_are_one_picture() -> None:
    assert _entries(
        evidence(1, "about 25% of POST /orders requests are failing", actor="ou_a", at=0),
        evidence(2, "users see a blank page after login", actor="ou_b", at=40),
    ) == [("impact", [1, 2])]


def test_an_ask_settled_by_a_decision_is_part_of_the_decision() -> None:
    assert _entries(
        evidence(1, "restart the workers pls, the leak is only getting worse", actor="ou_a", at=0),
        evidence(2, "Decision: we restart the workers now", actor="ou_ic", at=50),
    ) == [("decision", [1, 2])]


def test_an_announced_action_joins_the_report_that_it_was_done() -> None:
    assert _entries(
        evidence(1, "I'll purge the stale cache keys", actor="ou_a", at=0),
        evidence(2, "purged 30k stale cache keys", actor="ou_a", at=90),
    ) == [("mitigation", [1, 2])]


def test_an_approved_announced_action_is_that_action() -> None:
    assert _entries(
        evidence(1, "I'll purge the stale cache keys", actor="ou_a", at=0),
        evidence(2, "go", actor="ou_ic", at=20),
        evidence(3, "purged 30k stale cache keys", actor="ou_a", at=90),
    ) == [("mitigation", [1, 2, 3])]


def test_an_announced_action_never_done_is_not_an_entry() -> None:
    assert _entries(evidence(1, "I'll purge the stale cache keys")) == []


def test_the_same_reading_told_in_two_conversations_is_one_finding() -> None:
    assert _entries(
        evidence(1, "db-2 replica lag at 45s, cpu 80%", at=0, thread="omt_db"),
        evidence(2, "fyi db-2 replica lag at 45s", actor="ou_bob", at=120, thread="omt_main"),
    ) == [("finding", [1, 2])]


def test_a_status_page_post_quoting_the_impact_is_not_an_entry() -> None:
    text = 'Status page: Identified\n"Some customers cannot complete checkout. We are on it."'
    assert _entries(evidence(1, text)) == []


# --- titles ---------------------------------------------------------------------------------


def test_a_one_line_comms_note_keeps_the_action_next_to_it() -> None:
    reading = read_message(evidence(1, "status page updated. also restarted the workers"))
    assert (reading.kind, reading.category) == (MessageKind.FACT, Category.MITIGATION)


def test_titles_leave_out_greetings_questions_and_chatter_at_the_edges() -> None:
    item = evidence(1, "joining. is this customer facing? signups are failing for all users")
    [entry] = RuleSynthesizer().synthesize(_chunk([item])).entries
    assert entry.title == "Signups are failing for all users"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("hi all. the api is down. any ideas?", "the api is down."),
        ("the api is down", "the api is down"),
        ("ok? thanks?", "ok? thanks?"),  # nothing left: unchanged
        ("lol. one\ntwo. three?", "one\ntwo."),
    ],
)
def test_keep_sentences_trims_only_the_edges(text: str, kept: str) -> None:
    def says_something(sentence: str) -> bool:
        return not sentence.endswith("?") and sentence not in {"lol.", "hi all."}

    assert keep_sentences(text, says_something) == kept


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ("+1, cache hit rate dropped to 20%", "Cache hit rate dropped to 20%"),
        ("pls keep the flag off", "Keep the flag off"),
        ("fwiw the cron still runs on the primary", "The cron still runs on the primary"),
        ("orders-db primary is at 90% cpu", "orders-db primary is at 90% cpu"),
        ("max_retries applies to read timeouts too", "max_retries applies to read timeouts too"),
    ],
)
def test_titles_drop_filler_and_keep_the_case_of_names(raw: str, title: str) -> None:
    assert make_title(raw) == title


@pytest.mark.parametrize(
    "text",
    [
        "a-" * 2000,
        "a." * 1999 + " 是",
        " ".join(f"web-{n}" for n in range(600)),
        "ab · " * 800 + "\n" + "cd · " * 10,
    ],
)
def test_a_long_pasted_token_is_read_in_one_pass(text: str) -> None:
    """A pasted log line or token must not stall a window run: the cues were cubic on these
    (minutes for 4,000 characters) before each name was read as parts and separators."""
    started = time.perf_counter()
    read_message(evidence(1, text[:4000]))
    assert time.perf_counter() - started < 5.0
