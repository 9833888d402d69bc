"""Write the bundled demo chats and their expected timelines, deterministically.

    python -m tools.generate_demo_chat [--out DIRECTORY]

Writes the English chat (this module's story) and the Chinese one (`tools/demo_chat_zh.py`),
three files each (timeline_pipeline/demo_data's docstring says what they are). The machinery that
turns a story into Lark list items is `tools/demo_chat_script.py`; run this again and the files
come out byte for byte the same.

The expected timeline is written against script labels, not ids, and is resolved on output: it
was set down from the incident commander's point of view, before any synthesizer was tuned on it.
The negative examples (messages that must not become an entry of a kind on their own) are
written the same way; they were added after the demo showed the synthesizer drafting them.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from timeline_pipeline.demo_data import CHATS, DemoChat, chat_path
from tools import demo_chat_script as script
from tools.demo_chat_script import (
    BOTS,
    DEPLOY_BOT,
    INCIDENT_BOT,
    MONITOR_BOT,
    TENANT_KEY,
    ChatSpec,
    Expected,
    Negative,
    Script,
    code,
    link,
)
from tools.demo_chat_zh import CHINESE

__all__ = [
    "BOTS",
    "CHINESE",
    "DEPLOY_BOT",
    "ENGLISH",
    "INCIDENT_BOT",
    "MONITOR_BOT",
    "SEED",
    "SPECS",
    "START",
    "TENANT_KEY",
    "build",
    "expected_facts",
    "main",
    "negative_examples",
    "open_id",
    "render",
    "write",
]

SEED: Final = 20261129
START: Final = datetime(2026, 11, 29, 8, 0, 0, tzinfo=UTC)

PEOPLE: Final = {
    "priya": "Priya Natarajan",  # SRE on call, first responder, ops lead
    "aisha": "Aisha Okafor",  # engineering manager, incident commander
    "kenji": "Kenji Watanabe",  # checkout-api engineer
    "tomas": "Tomás Herrera",  # payment-gateway / acquirer integrations
    "jonas": "Jonas Becker",  # payments platform, shipped the config change
    "meilin": "Mei-Lin Zhao",  # DBA, orders-db
    "sofia": "Sofia Marchetti",  # customer support lead
    "daniel": "Daniel Kim",  # checkout product manager, comms and status page
}

_RUNBOOK: Final = "https://runbooks.internal.shopwave.io/checkout"
_GRAFANA: Final = "https://grafana.internal.shopwave.io/d"


# --- the script ------------------------------------------------------------------------------


def _story(s: Script) -> None:
    _detection(s)
    _everyone_joins(s)
    _investigation(s)
    _rollback(s)
    _second_finding(s)
    _recovery(s)
    _cleanup(s)
    _wrap_up(s)


def _detection(s: Script) -> None:
    s.pace(6, 22, typing=0.05)
    s.card(
        "[FIRING] checkout-api: p99 latency 6.8s > 2s for 5m",
        [
            "severity: warning · env: prod · region: eu-west-1",
            "route: POST /api/checkout/confirm",
        ],
        [("Runbook: checkout-latency", f"{_RUNBOOK}/latency"), ("Dashboard", f"{_GRAFANA}/chk")],
        label="ALERT_LATENCY",
        gap=0.4,
    )
    s.say("priya", "ack")
    s.say("priya", "looking")
    s.say(
        "priya",
        "checkout confirm p99 went from ~800ms to almost 7s. started creeping up maybe 10 min "
        "ago, alert only fired once it crossed 2s",
        label="IMPACT_LATENCY",
    )
    s.card(
        "[FIRING] checkout-api: 5xx ratio 6.2% > 2% for 5m",
        [
            "severity: critical · env: prod · region: eu-west-1",
            "top route: POST /api/checkout/confirm (94% of errors)",
        ],
        [("Runbook: checkout-errors", f"{_RUNBOOK}/errors"), ("Dashboard", f"{_GRAFANA}/chk")],
        label="ALERT_5XX",
    )
    s.say("priya", "and there go the 500s")
    s.say("priya", "ok declaring. sev2 for now, will bump it if it gets worse")
    s.bot(
        INCIDENT_BOT,
        "🚨 INC-2291 declared by Priya Natarajan\nSeverity: SEV2\n"
        "Summary: checkout confirm slow + 5xx\nIncident channel: this group",
        label="DECLARED",
        gap=4,
    )
    s.say(
        "priya",
        "@aisha @kenji paging you in, checkout confirm is slow and throwing 500s. prod, looks "
        "mostly EU",
        label="PAGE",
    )
    s.say("kenji", "joining")
    s.image("priya", label="SCREENSHOT")
    s.say("priya", "^ confirm latency + error rate, last 30 min")
    s.say("kenji", "looking at checkout-api logs")
    s.say("aisha", "here, getting on my laptop, 2 min")
    s.say(
        "kenji",
        "tons of timeouts calling payment-gateway from the confirm handler",
        label="FINDING_TIMEOUTS",
    )
    s.say("kenji", "some hikari pool timeouts mixed in too")
    s.say(
        "sofia",
        "hi all 👋 support here. we're getting chats about checkout failing, customers get "
        "'Something went wrong, please try again' after clicking Pay",
        label="IMPACT_SUPPORT",
    )
    s.say("priya", "thx sofia, yes we see it, incident is open")
    s.say(
        "sofia",
        "ok. ~25 chats in the last 10 min, normally it's like 2-3 an hour for payment stuff",
        label="IMPACT_SUPPORT_COUNT",
    )


def _everyone_joins(s: Script) -> None:
    """The burst: alerts escalate, everyone piles in at once."""
    s.at("08:04:50")
    s.pace(1.0, 4.0, typing=0.0)
    s.card(
        "[FIRING] checkout-api: 5xx ratio 12.9% > 10% for 2m",
        [
            "severity: critical · env: prod · region: eu-west-1",
            "escalated from 6.2% · top route: POST /api/checkout/confirm",
        ],
        [("Runbook: checkout-errors", f"{_RUNBOOK}/errors")],
        label="ALERT_5XX_ESCALATED",
    )
    s.card(
        "[FIRING] payment-gateway: upstream latency acq-eu-2 p99 9.4s > 3s",
        ["severity: warning · env: prod · upstream: acq-eu-2 (Paxio)"],
        [("Dashboard", f"{_GRAFANA}/pgw-upstreams")],
        label="ALERT_PGW",
    )
    s.say("tomas", "joining, just got the pgw page")
    s.say("jonas", "here")
    s.say(
        "daniel",
        "joining. is this customer facing? orders/min on the biz dashboard is falling off a cliff",
    )
    s.say("priya", "yes very")
    s.say("meilin", "here. anything on the db side?")
    s.say("priya", "dunno yet, can you check orders-db?")
    s.say("meilin", "on it")
    s.say("tomas", "pgw upstream latency to acq-eu-2 is way up", label="FINDING_PGW_LATENCY")
    s.say("kenji", "confirm requests are just sitting there waiting on pgw")
    s.say("aisha", "ok I'm on. I'll take IC", label="DECISION_IC")
    s.say("aisha", "@priya ops lead, @daniel comms pls", label="DECISION_ROLES")
    s.say("daniel", "ack")
    s.say("priya", "ack")
    s.say("sofia", "40 chats now")
    s.say(
        "sofia",
        "and a few saying they were charged but never got an order confirmation 😬",
        label="IMPACT_CHARGED",
    )
    s.say(
        "daniel",
        "orders/min down ~35% vs same time last week",
        label="IMPACT_ORDERS",
    )
    s.say("jonas", "is it only EU?")
    s.say("tomas", "mostly EU cards, US looks ok-ish", label="FINDING_EU")
    s.say("kenji", "US has errors too")
    s.say("kenji", "way fewer tho")
    s.say("priya", "+1 EU heavy")
    s.say(
        "meilin",
        "orders-db primary cpu 31%, no lock waits, repl lag 0. boring from here",
        label="FINDING_DB_OK",
    )
    s.say("aisha", "ok thx")
    s.say("jonas", "hmm")
    s.say("jonas", "we shipped a pgw config change not long ago")
    s.say("aisha", "when")
    s.say(
        "jonas",
        "~10 min before the first alert. payments-config #4471",
        label="FINDING_DEPLOY",
    )
    s.say("tomas", "the acq-eu-2 routing one?")
    s.say("jonas", "yeah routing + timeouts", label="FINDING_DEPLOY_WHAT")
    s.say("aisha", "thats suspicious. Jonas can you put the diff in a thread")
    s.say("jonas", "yep")
    s.say("kenji", "+1")
    s.say("priya", "p99 at 11s now")
    s.say("daniel", "should I put something on the status page?")
    s.say("aisha", "yes pls, 'investigating', keep it vague for now")
    s.say("daniel", "on it")


def _investigation(s: Script) -> None:
    s.at("08:07:00")
    s.pace(4, 18, typing=0.05)
    s.post(
        "aisha",
        "INC-2291 roles + threads",
        [
            "IC: @aisha",
            "Ops lead: @priya",
            "Comms / status page: @daniel",
            "Customer support: @sofia",
            "Threads so we don't drown this channel: pgw config diff (@jonas), gateway/acquirer "
            "(@tomas), db (@meilin), checkout-api errors (@kenji)",
            "Decisions go in the main channel pls.",
        ],
        label="ROLES_POST",
    )
    s.say("kenji", "👍")
    s.say("meilin", "👍")
    diff = s.say("jonas", "thread: payments-config #4471 diff", label="T_DIFF")
    s.post(
        "jonas",
        "payments-config #4471 (release r812)",
        [
            "went to payment-gateway prod ~10 min before the first alert, all 16 pods at once",
            [
                code(
                    "gateways.acquirer_client:\n"
                    "-  read_timeout_ms: 3000\n"
                    "+  read_timeout_ms: 30000\n"
                    "-  max_retries: 1\n"
                    "+  max_retries: 3\n"
                    "routing.eu_cards:\n"
                    "-  primary: acq-eu-1\n"
                    "+  primary: acq-eu-2   # Paxio pilot, 100%",
                    "YAML",
                )
            ],
            [
                {"tag": "text", "text": "PR: "},
                link(
                    "payments-config#4471",
                    "https://git.internal.shopwave.io/payments-config/pull/4471",
                ),
            ],
        ],
        reply=diff,
        thread=True,
        label="FINDING_DIFF",
    )
    s.say(
        "kenji",
        "30s read timeout?? our client timeout from checkout to pgw is 10s",
        reply=diff,
        label="FINDING_TIMEOUT_MISMATCH",
    )
    s.say(
        "kenji",
        "and with 3 retries pgw can hang on to a single request for like 2 min",
        reply=diff,
    )
    s.say(
        "tomas",
        "the timeout bump was on purpose, Paxio's 3DS step is slow and their integration guide "
        "says to allow 20s+",
        reply=diff,
    )

    gateway = s.say("tomas", "gateway / acquirer thread", label="T_GW")
    s.say(
        "tomas",
        "acq-eu-2 (Paxio) latency: p50 2.1s, p99 ~9.5s. acq-eu-1 was ~600ms p99 yesterday",
        reply=gateway,
        thread=True,
        label="FINDING_ACQ_LATENCY",
    )
    s.say(
        "jonas",
        "it was reviewed and passed staging. but staging talks to the paxio sandbox which is fast",
        reply=diff,
        label="FINDING_STAGING",
    )
    s.say("aisha", "was it canaried?", reply=diff)
    s.say(
        "jonas",
        "no. config deploys go to all pgw pods at once, there's no canary stage for "
        "payments-config",
        reply=diff,
        label="FINDING_NO_CANARY",
    )
    s.say("tomas", "their status page is all green ofc", reply=gateway)
    s.say("tomas", "opened a ticket with Paxio support, PX-88213", reply=gateway)

    db = s.say("meilin", "db thread", label="T_DB")
    s.say(
        "meilin",
        "orders-db primary: cpu 31%, iops normal, nothing running > 10s, no blocking locks",
        reply=db,
        thread=True,
        label="FINDING_DB_DETAIL",
    )
    s.say(
        "tomas",
        "also fwiw max_retries was meant for connection errors only, but our client applies it "
        "to read timeouts too",
        reply=diff,
        label="FINDING_RETRIES_ON_TIMEOUT",
    )
    s.say("aisha", "ok. noting the canary thing for the PM", reply=diff)
    s.say("jonas", "yeah sorry, that one's on me", reply=diff)
    s.say("aisha", "no blame, we look at the process later", reply=diff)
    s.say("priya", "is acq-eu-1 still up if we need to go back?", reply=gateway)
    s.say(
        "tomas",
        "yes it's healthy, still takes the non-3DS traffic. routing back is just config",
        reply=gateway,
        label="FINDING_ACQ1_OK",
    )
    s.say(
        "meilin",
        "connections from the checkout_app role: 476 / 480 (12 pods x 40 pool)",
        reply=db,
        label="FINDING_POOL_FULL",
    )
    s.say("priya", "so checkout pools are basically full", reply=db)
    s.say(
        "meilin",
        "yes, but if requests are stuck waiting on pgw while holding a conn that's what you'd "
        "expect",
        reply=db,
    )
    s.say(
        "kenji",
        "confirm opens the order tx before calling pgw, so yeah every stuck request holds a conn",
        reply=db,
    )
    s.say("meilin", "external call inside a tx 🙃", reply=db)
    s.say("kenji", "I know I know. old code", reply=db)

    s.say(
        "sofia",
        "we sent agents a macro: don't tell customers to retry more than once, we'll follow up "
        "on any charges",
    )
    s.say("daniel", "status page is up")
    s.post(
        "daniel",
        "Status page: Investigating",
        [
            "Posted on the public status page:",
            "\"We're investigating elevated errors and slow responses when completing checkout. "
            "Some customers, mainly in Europe, may be unable to complete their purchase. Next "
            'update in 30 minutes."',
            [link("status.shopwave.com", "https://status.shopwave.com/incidents/k2x9v7")],
        ],
        locale="en_us",
        label="STATUS_INVESTIGATING",
    )
    s.say("sofia", "@daniel thanks, putting that link in the macro")

    checkout = s.say("kenji", "checkout-api errors breakdown", label="T_CO")
    s.say(
        "kenji",
        "last 15 min on confirm: 71% GatewayTimeoutException (SocketTimeoutException: Read timed "
        "out after 10000ms), 26% 'HikariPool-1 - Connection is not available, request timed out "
        "after 5000ms', rest misc",
        reply=checkout,
        thread=True,
        label="FINDING_ERROR_MIX",
    )
    s.say(
        "kenji",
        "pool errors are a symptom i think. gateway calls pile up and hold the connections",
        reply=checkout,
    )
    s.say(
        "priya",
        "so once a pod's pool is full it fails for everyone on that pod, not just EU cards",
        reply=checkout,
    )
    s.say("kenji", "yep, thats why we see US errors too", label="AGREE_US_ERRORS", reply=checkout)
    s.say(
        "tomas", "auth success on acq-eu-2 is only 81% too, lots of issuer timeouts", reply=gateway
    )
    s.say("priya", "any particular pgw pods worse than others?", reply=gateway)
    s.say(
        "tomas",
        "no, uniform. every pod, every acq-eu-2 call. pgw cpu is fine, it's just waiting on "
        "sockets",
        reply=gateway,
    )

    s.say("priya", "fyi silenced the latency alert for 30 min, the 5xx one stays on")
    s.say("kenji", "heap + GC on the checkout pods look fine, it's not the JVM")
    s.say("priya", "tomcat threads on checkout at 400/400 tho, request queue growing")
    s.say("aisha", "@sofia anything special about the affected customers? device, payment method?")
    s.say("sofia", "mix of everything. lots of apple pay but that's just what people use")
    s.say("tomas", "apple pay EU goes through acq-eu-2 now too, so that fits")
    s.say(
        "daniel",
        "execs are asking in #leadership, I'll update them from here. pls don't cross post",
    )
    s.say("daniel", "any chance this is the CDN thing from last week?")
    s.say("priya", "no, edge is fine, the errors come from origin")
    s.say("priya", "also checked: no checkout-api deploy in 2 days, no flag changes today")
    s.say("meilin", "redis for carts is fine too fwiw")
    s.say("aisha", "ok so everything points at pgw / #4471")
    s.say("kenji", "is there a bridge?")
    s.say("aisha", "no bridge, let's keep it in chat, easier to reconstruct later")
    s.say("priya", "5xx on confirm at 18% now, worst so far")
    s.say("daniel", "for later: do we have a rough number of failed checkouts so far?")
    s.say("priya", "working on it, will post when I have something not made up")
    s.say("aisha", "later is fine, fix first")
    s.say("sofia", "ticket count 60ish")
    s.say("jonas", "brb 1 min, vpn dropped")
    s.say("jonas", "back")


def _rollback(s: Script) -> None:
    s.at("08:22:30")
    s.pace(6, 22, typing=0.06)
    s.say("aisha", "ok, options. @tomas @jonas what are we looking at")
    s.say(
        "tomas",
        "a) roll back #4471 completely. b) hotfix config: eu_cards back to acq-eu-1 but keep "
        "the new timeouts for the pilot",
    )
    s.say(
        "jonas",
        "rollback is one click and puts us on yesterdays known-good r811. hotfix needs PR + "
        "review + deploy, 20 min minimum",
    )
    s.say("kenji", "roll back pls. the 30s timeout is the actual problem for us, not just paxio")
    s.say("tomas", "fine. we lose the paxio pilot for today, not the end of the world")
    s.say("daniel", "does anything bad happen to people mid-payment if we roll back?")
    s.say(
        "tomas",
        "in-flight 3DS challenges on acq-eu-2 will fail, maybe a few dozen people. they can retry",
    )
    s.say(
        "aisha",
        "Decision: we roll back payments-config to r811 (= revert #4471). Jonas drives, Tomás "
        "watches acq-eu-1 traffic. Payment deploys are frozen until we close this.",
        label="DECISION_ROLLBACK",
    )
    s.say("jonas", "rolling bakc now")
    s.say("priya", "ack")
    s.say("meilin", "+1")
    s.say("tomas", "watching acq-eu-1")
    s.at("08:27:00")
    s.bot(
        DEPLOY_BOT,
        "⏪ payments-config rollback started: r812 → r811\n"
        "target: payment-gateway (prod, 16 pods) · by jonas.becker",
        label="BOT_ROLLBACK_STARTED",
    )
    s.pace(10, 30, typing=0.06)
    s.say("kenji", "fingers crossed")
    s.say("tomas", "first pods on r811, acq-eu-1 traffic picking up")
    s.say("jonas", "8/16")
    question = s.say("sofia", "what should I tell the agents?")
    s.say(
        "aisha",
        "we've identified a likely cause and are rolling out a fix, no ETA yet",
        reply=question,
    )
    s.say("sofia", "👍")
    s.say(
        "sofia",
        "ticket count 85, about 20 of them are 'charged but no order'",
        label="IMPACT_TICKETS",
    )
    s.say("jonas", "12/16")
    s.say("kenji", "seeing more 200s on confirm already")
    s.say(
        "meilin",
        "checkout conns on the db still at ~470 btw, not moving yet",
        reply="T_DB",
        label="FINDING_CONNS_NOT_MOVING",
    )
    s.say("daniel", "I'll move the status page to 'identified' once we see it working")
    s.at("08:33:50")
    s.bot(
        DEPLOY_BOT,
        "✅ payments-config rollback finished\npayment-gateway (prod) on r811 · 16/16 pods healthy",
        label="BOT_ROLLBACK_DONE",
    )
    s.pace(6, 25, typing=0.05)
    s.say(
        "jonas",
        "rollback done, all 16 pgw pods on r811, read_timeout back to 3s",
        label="MITIGATION_ROLLBACK",
    )
    s.say(
        "tomas",
        "eu_cards traffic is back on acq-eu-1, p99 1.1s, auth success 97%",
        label="MITIGATION_ROUTING",
    )
    s.say("aisha", "thanks Jonas")
    s.card(
        "[RESOLVED] payment-gateway: upstream latency acq-eu-2 p99 9.4s > 3s",
        [f"resolved after {s.minutes_since('ALERT_PGW')}m · no traffic on acq-eu-2"],
    )
    s.say("priya", "confirm p99 comming down... 4.2s")
    s.say("priya", "2.3s")
    s.say("kenji", "gateway timeouts in the logs stopped")
    s.say("sofia", "first customer confirmed she could pay 🙌")
    s.say("daniel", "status page moved to 'Identified'")
    s.say("aisha", "@priya ping me when 5xx is under 2%")
    s.say("priya", "will do. 9% now... 6%")
    s.at("08:37:40")
    s.say(
        "priya",
        "latency is basically back, p99 1.2s. but 5xx is still ~4% (peak was 18%)",
        label="RECOVERY_PARTIAL",
    )
    s.say("kenji", "hm")
    s.card(
        "[FIRING] checkout-api: 5xx ratio 4.1% > 2% for 5m",
        [
            "severity: critical · env: prod · region: eu-west-1",
            f"still firing ({s.minutes_since('ALERT_5XX')}m) · top route: "
            "POST /api/checkout/confirm",
        ],
        [("Runbook: checkout-errors", f"{_RUNBOOK}/errors")],
    )
    s.say("aisha", "so better but not fixed. what's the remaining 4%?")
    s.say("kenji", "looking")
    s.say("sofia", "chats slowing down but still coming in")
    s.say("daniel", "orders/min recovering, still ~15% under normal")
    s.say("priya", "5xx by pod: 7 pods at 8-9%, the other 5 at 0.2%")
    s.say(
        "daniel",
        "revenue dashboard says we're ~€40k behind the same window last week. some of "
        "that comes back as retries",
        label="IMPACT_REVENUE",
    )


def _second_finding(s: Script) -> None:
    s.at("08:41:00")
    s.pace(10, 35, typing=0.06)
    s.say(
        "kenji",
        "remaining errors are all the hikari one now, 'Connection is not available, request "
        "timed out after 5000ms'. zero gateway timeouts since the rollback",
        reply="T_CO",
        label="FINDING_HIKARI",
    )
    s.say(
        "kenji",
        "7 of 12 pods: active=40 idle=0 and ~200 threads waiting. it's not draining. other 5 "
        "pods look normal",
        reply="T_CO",
        label="FINDING_STUCK_PODS",
    )
    s.say("priya", "so the pool is stuck, not just busy?", reply="T_CO")
    s.say(
        "meilin",
        "pg_stat_statements looks like yesterday, no new heavy queries",
        reply="T_DB",
    )
    s.say(
        "kenji",
        "looks like it. pgw answers in 1s again and the conns never come back",
        reply="T_CO",
    )
    s.say(
        "meilin",
        "interesting. pg_stat_activity: 212 sessions from checkout_app in state 'idle in "
        "transaction', oldest xact_start ~50 min ago",
        reply="T_DB",
        label="FINDING_IDLE_IN_TX",
    )
    s.file("meilin", "pg_stat_activity_checkout_app.csv", reply="T_DB", label="PG_STAT_FILE")
    s.say(
        "meilin",
        "^ full dump if anyone wants it. they hold row locks on orders too, a couple of UPDATEs "
        "from the order-expiry job are waiting on them",
        reply="T_DB",
        label="FINDING_ROW_LOCKS",
    )
    s.say("kenji", "oh no", reply="T_DB")
    s.say(
        "kenji",
        "so those are confirms that timed out and never rolled back their tx",
        reply="T_DB",
    )
    s.say("aisha", "@kenji @meilin are you two looking at the same thing? sounds like it")
    s.say("kenji", "yes, stuck connections. digging into why they leak")
    s.say("kenji", "grepping for everywhere we catch GatewayTimeoutException", reply="T_CO")
    s.say("daniel", "should I say 'partially recovered' on the status page?")
    s.say("aisha", "hold off until the 5xx is gone, 10-15 min")
    s.say("sofia", "agents are asking if customers should retry now")
    s.say("aisha", "yes, retrying is fine now, most will go through")
    s.say(
        "kenji",
        "found it. ConfirmOrderHandler: when our 10s client timeout to pgw fires, the "
        "SocketTimeoutException goes through the retry wrapper and gets rethrown as "
        "GatewayTimeoutException, and that catch never calls tx.rollback(). the connection "
        "stays checked out + idle in transaction forever",
        reply="T_CO",
        label="FINDING_LEAK",
    )
    s.say(
        "kenji",
        "before #4471 pgw always answered within ~6s (3s x 2 attempts) so we never hit our own "
        "10s timeout. with 30s x 4 attempts we hit it all the time",
        reply="T_CO",
        label="FINDING_LEAK_WHY",
    )
    s.say("meilin", "nice find", reply="T_CO")
    s.say("tomas", "ahh. so the config made it visible, the bug was always there", reply="T_CO")
    s.say("kenji", "yep", reply="T_CO")

    s.at("08:51:30")
    s.pace(5, 20, typing=0.05)
    s.say("aisha", "how do we get the stuck conns back?")
    s.say("kenji", "rolling restart of checkout-api. pods go away, conns close")
    s.say(
        "meilin",
        "or I pg_terminate_backend the idle-in-tx ones from checkout_app. instant, and the pools "
        "reconnect on their own",
    )
    s.say("priya", "can we bump the pool to 80 meanwhile so healthy traffic gets thru?")
    s.say(
        "meilin",
        "pls no. orders-db max_connections is 800 and we're at ~690. doubling the checkout pools "
        "would eat all of it",
        label="FINDING_MAX_CONNECTIONS",
    )
    s.say("aisha", "ok no pool changes")
    s.say(
        "kenji", "I'd do both: terminate first, then restart so we also get clean pools + threads"
    )
    s.say(
        "aisha",
        "Decision: Mei-Lin terminates checkout_app sessions that are idle in transaction for "
        "more than 5 min, then Kenji does a rolling restart of checkout-api. No pool size "
        "changes. Go",
        label="DECISION_TERMINATE_RESTART",
    )
    s.say("meilin", "terminating")
    s.post(
        "meilin",
        "",
        [
            "done:",
            [
                code(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity\n"
                    "WHERE usename = 'checkout_app' AND state = 'idle in transaction'\n"
                    "  AND xact_start < now() - interval '5 min';\n"
                    "-- 212 rows",
                    "SQL",
                )
            ],
            "212 backends terminated",
        ],
        label="MITIGATION_TERMINATE",
    )
    s.say("aisha", "ty")
    s.say("kenji", "pools on the 7 bad pods recovering already, active dropping")
    s.say(
        "kenji",
        "starting rolling restart of checkout-api, maxUnavailable 2",
        label="MITIGATION_RESTART_START",
    )
    s.bot(
        DEPLOY_BOT,
        "🔄 checkout-api (prod) rolling restart triggered by kenji.watanabe · 12 pods",
        gap=3,
    )
    s.say("sofia", "one customer says she was charged twice, pasting her message:")
    s.say("sofia", "(customer message with email and last 4 digits)", recalled=38)
    s.say(
        "sofia",
        "sorry, recalled that, it had the customer's email in it. ticket is #58213 if someone "
        "needs it",
        label="RECALL_EXPLAINED",
    )
    s.say("kenji", "I'll look at that one once the restart is done")
    s.say("kenji", "4/12")
    s.say("priya", "5xx dropping with every batch, 2.1% now")
    s.say(
        "meilin",
        "new conns from checkout look normal, nothing idle in tx so far",
        reply="T_DB",
    )
    s.say("kenji", "8/12")
    s.say("aisha", "👀")
    s.at("08:59:50")
    s.bot(DEPLOY_BOT, "✅ checkout-api (prod) rolling restart finished · 12/12 pods ready")
    s.say(
        "kenji",
        "restart done, 12/12 ready. pools look healthy everywhere (active 2-9, nobody waiting)",
        label="MITIGATION_RESTART_DONE",
    )


def _recovery(s: Script) -> None:
    s.pace(10, 40, typing=0.05)
    s.card(
        "[RESOLVED] checkout-api: 5xx ratio 0.3% < 2%",
        [f"resolved after {s.minutes_since('ALERT_5XX')}m · env: prod · region: eu-west-1"],
        [("Dashboard", f"{_GRAFANA}/chk")],
    )
    s.card(
        "[RESOLVED] checkout-api: p99 latency 0.74s < 2s",
        [f"resolved after {s.minutes_since('ALERT_LATENCY')}m · env: prod · region: eu-west-1"],
    )
    s.say("priya", "5xx 0.2%, p99 740ms. that's baseline 🎉", label="RECOVERY_METRICS")
    s.say("tomas", "🎉")
    s.say("jonas", "phew")
    s.say(
        "meilin",
        "idle in transaction from checkout_app: 0. total conns from checkout 96",
        label="RECOVERY_DB",
    )
    s.say("sofia", "no new checkout chats for ~8 min", label="RECOVERY_SUPPORT")
    s.say(
        "daniel", "orders/min back to where it was last week at this time", label="RECOVERY_ORDERS"
    )
    s.say(
        "kenji",
        "placed 5 test orders on prod with test cards (EU visa, EU mastercard 3DS, US amex, "
        "apple pay, saved card), all confirmed in <1s",
        label="RECOVERY_TEST_ORDERS",
    )
    s.say("tomas", "acq-eu-1 auth success 97.8%, that's normal")
    s.say("aisha", "nice. let's watch it for 15 min before we call it resolved")
    s.say("priya", "unsilenced the latency alert")
    s.say("aisha", "@daniel can you move the status page to monitoring")
    s.say(
        "daniel",
        "done: 'A fix has been implemented and we are monitoring the results.'",
    )
    s.say(
        "jonas",
        "payments-config is locked on r811 in the deploy tool, nobody can push to it",
        label="CONFIG_LOCKED",
    )


def _cleanup(s: Script) -> None:
    s.at("09:07:30")
    s.pace(8, 30, typing=0.06)
    s.say(
        "sofia",
        "what about the people who say they were charged but got no order? I have ~20 of those "
        "tickets",
    )
    s.say(
        "tomas",
        "those are authorized-not-captured. the acquirer approved the auth but checkout had "
        "already given up on the request",
        label="FINDING_AUTH_NOT_CAPTURED",
    )
    s.say(
        "tomas",
        "nobody is actually charged until capture, auths fall off after 7 days. but it shows as "
        "pending on their card so it looks like a charge",
    )
    s.say(
        "kenji",
        "checked: 143 orders in PENDING_PAYMENT with a successful auth on the gateway side since "
        "#4471 went out",
        label="IMPACT_STUCK_ORDERS",
    )
    s.say("aisha", "options?")
    s.say(
        "tomas",
        "capture + confirm the order if the cart is still valid, void the auth if the customer "
        "already paid again for the same cart",
    )
    s.say("daniel", "capture where we can, they wanted the stuff")
    s.say(
        "aisha",
        "agree. go: capture+confirm, void the duplicates. dry run first pls",
        label="DECISION_RECONCILE",
    )
    s.say("kenji", "running the reconcile job with --dry-run")
    s.say(
        "kenji",
        "dry run: 143 orders → 131 capture+confirm, 12 void (customer has a newer paid order for "
        "the same cart)",
        label="RECONCILE_DRY_RUN",
    )
    s.say("aisha", "looks right. run it")
    s.say("kenji", "running for real")
    s.say(
        "priya",
        "rough impact: ~2,300 failed checkout attempts over ~70 min, peak 5xx 18% on confirm, "
        "~80% of failures on EU cards. will refine for the PM",
        label="IMPACT_ESTIMATE",
        edited=95,
    )
    s.say("daniel", "thx, that's what I needed for the exec update")
    s.say(
        "kenji",
        "done. 131 captured, confirmation emails queued. 12 auths voided",
        label="MITIGATION_RECONCILE",
    )
    s.say("aisha", "nice")
    s.say(
        "kenji",
        "@sofia the double charge from ticket #58213 was one of the 12 voids, she only pays once",
        reply="RECALL_EXPLAINED",
    )
    s.say(
        "sofia",
        "amazing, thank you! we'll answer those tickets with the 'order completed' template",
    )
    s.say(
        "tomas",
        "voids went through at the acquirer. the pending amount disappears from their card in "
        "1-3 days depending on the bank",
    )
    s.say("sofia", "do we need to email the 143 proactively?")
    s.say("daniel", "yes, I'll draft somethign with support once the orders are all fixed")
    s.say("sofia", "I'm tagging all the tickets with INC-2291 so we can count them for the PM")
    s.say("aisha", "thanks all, this is looking good")


def _wrap_up(s: Script) -> None:
    s.at("09:16:40")
    s.pace(10, 40, typing=0.05)
    s.post(
        "kenji",
        "Root cause (draft)",
        [
            "1. payments-config #4471 raised the pgw read timeout 3s → 30s and retries 1 → 3, and "
            "moved all EU card traffic to acq-eu-2 (Paxio), which was slow (p99 ~9.5s)",
            "2. so pgw calls regularly took longer than checkout's own 10s client timeout",
            "3. ConfirmOrderHandler keeps the order DB transaction open during the pgw call and "
            "never rolls it back on the client-timeout path -> every timeout leaked a "
            "connection (idle in transaction)",
            "4. leaked conns filled the 40-conn pools -> 5xx for every customer on those pods, "
            "EU or not",
            "5. the rollback stopped new leaks, the leaked ones stayed until we terminated them "
            "+ restarted",
            "contributing: config deploys have no canary, and staging uses the Paxio sandbox so "
            "the slowness never showed up before prod",
        ],
        label="ROOT_CAUSE",
    )
    s.say("aisha", "+1, matches everything we saw")
    s.say("meilin", "+1. I'd add: we had no alert on idle-in-transaction sessions")
    s.say(
        "tomas",
        "Paxio support came back: they had a degradation on their 3DS service in eu-central "
        "for about 2 hours, resolved now. so the slow acquirer was real, but we should have "
        "survived it",
        reply="T_GW",
        label="FINDING_PAXIO",
    )
    s.say("jonas", "agreed")
    s.say("priya", "still flat. 5xx 0.2%, p99 ~750ms")
    s.post(
        "aisha",
        "INC-2291 follow-ups",
        [
            "1. @kenji roll back the tx on every error path in ConfirmOrderHandler, and move the "
            "pgw call out of the DB transaction",
            "2. @jonas canary stage for payments-config (a few pgw pods for 15 min before the "
            "rest)",
            "3. @tomas lint that pgw timeout x attempts stays below checkout's client timeout; "
            "agree a latency SLA with Paxio before the pilot comes back",
            "4. @priya alerts on hikari pool saturation and on idle-in-transaction sessions",
            "5. @meilin idle_in_transaction_session_timeout for the checkout_app role",
            "6. @sofia follow up with the affected customers (143 orders + open tickets)",
            "7. me: postmortem doc",
        ],
        locale="en_us",
        label="NEXT_STEPS",
    )
    s.say(
        "meilin",
        "5 I can do right now actually, it's a role setting, no restart needed",
        reply="NEXT_STEPS",
    )
    s.say("aisha", "go for it")
    s.say(
        "meilin",
        "done: ALTER ROLE checkout_app SET idle_in_transaction_session_timeout = '60s'. applies "
        "to new connections, so after the restart that's all of them",
        label="MITIGATION_IDLE_TIMEOUT",
    )
    s.say(
        "jonas",
        "I'll have a PR for the canary stage early next week",
        reply="NEXT_STEPS",
        label="NEXT_CANARY",
    )
    s.say(
        "kenji",
        "rollback fix is a one-liner, PR up in 10 min. moving the call out of the tx is bigger, "
        "ticket CHK-1932",
        reply="NEXT_STEPS",
        label="NEXT_TX_FIX",
    )
    s.say("priya", "alerts PR tomorrow", reply="NEXT_STEPS")
    s.say(
        "aisha",
        "@jonas pls keep payments-config locked until the canary is in, changes go through me "
        "until then",
        label="DECISION_CONFIG_LOCK",
    )
    s.say("jonas", "ok")
    s.say(
        "daniel",
        "for the exec update I'm planning to say: ~70 min of degraded checkout, ~2.3k failed "
        "attempts, all stuck orders completed or voided, follow-ups in the postmortem. ok?",
    )
    s.say("aisha", "yes that's accurate")
    s.say("kenji", "rollback fix PR is up: CHK-1931", reply="NEXT_STEPS")
    s.say("aisha", "postmortem tue 15:00 CET?")
    s.say("kenji", "I'm out tue afternoon, dentist 🦷")
    s.say("tomas", "wed morning works for me")
    s.say("priya", "wed works")
    s.say("aisha", "wed 10:00 CET then, invite coming", label="NEXT_POSTMORTEM")
    s.say("daniel", "👍")
    s.say("meilin", "👍")
    s.post(
        "daniel",
        "Status page: Resolved",
        [
            '"Earlier today some customers, mainly in Europe, saw errors when completing '
            "checkout. The issue has been resolved and affected orders have been completed. "
            "We're sorry for the disruption.\"",
            [link("status.shopwave.com", "https://status.shopwave.com/incidents/k2x9v7")],
        ],
        locale="en_us",
        label="STATUS_RESOLVED",
    )
    s.at("09:30:40")
    s.pace(5, 25, typing=0.04)
    s.say(
        "aisha",
        "5xx flat at baseline for half an hour and no new tickets. resolving INC-2291. thanks "
        "everyone, really good work 🙏",
        label="RECOVERY_RESOLVED",
    )
    s.bot(
        INCIDENT_BOT,
        f"✅ INC-2291 resolved by Aisha Okafor\nDuration: {s.duration_since('DECLARED')}\n"
        "Postmortem owner: Aisha Okafor",
        gap=3,
    )
    s.say("jonas", "sorry again folks")
    s.say("aisha", "all good, that's what postmortems are for")
    s.say("priya", "thx all")
    s.say("tomas", "🙏")
    s.say("meilin", "logging off, ping me if it comes back")
    s.say("sofia", "thank you everyone!! support is happy")
    s.say("daniel", "I'll pull the timeline for the postmortem doc from the incident tool")
    s.say("kenji", "ttyl")


# --- the expected timeline -------------------------------------------------------------------

_EXPECTED: Final[tuple[Expected, ...]] = (
    (
        "impact",
        ("IMPACT_LATENCY", "PAGE"),
        "Checkout confirm p99 latency up from ~800ms to ~7s, with 5xx errors, mostly in the EU",
    ),
    (
        "impact",
        ("IMPACT_SUPPORT", "IMPACT_SUPPORT_COUNT"),
        "Customers get 'Something went wrong' after clicking Pay; ~25 support chats in 10 minutes "
        "(normally 2-3 an hour)",
    ),
    (
        "decision",
        ("DECISION_IC", "DECISION_ROLES", "ROLES_POST"),
        "Aisha took incident command; Priya ops lead, Daniel comms; investigation split into "
        "threads",
    ),
    (
        "impact",
        ("IMPACT_CHARGED", "IMPACT_TICKETS"),
        "Customers report being charged without getting an order (~20 of 85 tickets)",
    ),
    ("impact", ("IMPACT_ORDERS",), "Orders per minute down ~35% against the same time last week"),
    (
        "finding",
        ("FINDING_TIMEOUTS", "FINDING_PGW_LATENCY", "FINDING_EU"),
        "Confirm requests time out waiting on payment-gateway; its upstream latency to acq-eu-2 "
        "is way up; mostly EU cards",
    ),
    (
        "finding",
        ("FINDING_DB_OK", "FINDING_DB_DETAIL"),
        "orders-db healthy: CPU 31%, no lock waits or slow queries, no replication lag",
    ),
    (
        "finding",
        ("FINDING_DEPLOY", "FINDING_DEPLOY_WHAT"),
        "payments-config #4471 (acq-eu-2 routing and timeouts) shipped ~10 minutes before the "
        "first alert",
    ),
    (
        "finding",
        ("FINDING_DIFF", "FINDING_TIMEOUT_MISMATCH", "FINDING_RETRIES_ON_TIMEOUT"),
        "#4471 raised the gateway read timeout 3s -> 30s and retries 1 -> 3 (retries apply to "
        "read timeouts) and sent all EU cards to acq-eu-2; checkout's own client timeout is 10s",
    ),
    (
        "finding",
        ("FINDING_NO_CANARY", "FINDING_STAGING"),
        "#4471 went to all gateway pods at once (no canary for payments-config); staging uses the "
        "fast Paxio sandbox",
    ),
    (
        "finding",
        ("FINDING_ACQ_LATENCY", "FINDING_ACQ1_OK"),
        "acq-eu-2 (Paxio) p99 ~9.5s against ~600ms on acq-eu-1; acq-eu-1 healthy, routing back "
        "is config only",
    ),
    (
        "finding",
        ("FINDING_POOL_FULL", "FINDING_ERROR_MIX"),
        "Checkout DB pools full (476/480); confirm errors 71% gateway timeouts, 26% Hikari "
        "connection timeouts",
    ),
    (
        "decision",
        ("DECISION_ROLLBACK",),
        "Roll back payments-config to r811 (revert #4471); payment deploys frozen",
    ),
    (
        "mitigation",
        ("MITIGATION_ROLLBACK", "MITIGATION_ROUTING"),
        "payments-config rolled back to r811 on all 16 gateway pods; EU cards back on acq-eu-1",
    ),
    (
        "recovery",
        ("RECOVERY_PARTIAL",),
        "Latency recovered after the rollback (p99 1.2s) but 5xx still ~4%",
    ),
    (
        "impact",
        ("IMPACT_REVENUE",),
        "Revenue ~EUR 40k behind the same window last week",
    ),
    (
        "finding",
        ("FINDING_HIKARI", "FINDING_STUCK_PODS", "FINDING_CONNS_NOT_MOVING"),
        "Remaining errors are Hikari connection timeouts; pools stuck at 40/40 on 7 of 12 "
        "checkout pods",
    ),
    (
        "finding",
        ("FINDING_IDLE_IN_TX", "FINDING_ROW_LOCKS"),
        "212 checkout_app sessions idle in transaction (oldest ~50 min), holding row locks on "
        "orders",
    ),
    (
        "finding",
        ("FINDING_LEAK", "FINDING_LEAK_WHY"),
        "ConfirmOrderHandler never rolls back its transaction when checkout's 10s gateway timeout "
        "fires; #4471 made that path common",
    ),
    (
        "decision",
        ("DECISION_TERMINATE_RESTART", "FINDING_MAX_CONNECTIONS"),
        "Terminate idle-in-transaction checkout sessions, then rolling-restart checkout-api; no "
        "pool size increase (orders-db at ~690/800 connections)",
    ),
    (
        "mitigation",
        ("MITIGATION_TERMINATE",),
        "Terminated 212 idle-in-transaction checkout_app sessions",
    ),
    (
        "mitigation",
        ("MITIGATION_RESTART_START", "MITIGATION_RESTART_DONE"),
        "Rolling restart of checkout-api (12/12 pods); connection pools healthy",
    ),
    (
        "recovery",
        (
            "RECOVERY_METRICS",
            "RECOVERY_DB",
            "RECOVERY_SUPPORT",
            "RECOVERY_ORDERS",
            "RECOVERY_TEST_ORDERS",
        ),
        "5xx back to 0.2% and p99 740ms; test orders succeed; support chats stopped; orders/min "
        "normal",
    ),
    (
        "impact",
        ("IMPACT_STUCK_ORDERS", "FINDING_AUTH_NOT_CAPTURED"),
        "143 orders stuck in PENDING_PAYMENT with the card authorized but not captured",
    ),
    (
        "decision",
        ("DECISION_RECONCILE",),
        "Capture and confirm stuck orders, void authorizations where the customer paid again; "
        "dry run first",
    ),
    (
        "mitigation",
        ("RECONCILE_DRY_RUN", "MITIGATION_RECONCILE"),
        "Reconciled stuck orders: 131 captured and confirmed, 12 authorizations voided",
    ),
    (
        "impact",
        ("IMPACT_ESTIMATE",),
        "~2,300 failed checkout attempts over ~70 minutes; 5xx peaked at 18%; ~80% EU cards",
    ),
    (
        "root_cause",
        ("ROOT_CAUSE",),
        "#4471's longer gateway timeouts and retries plus slow acq-eu-2 outlasted checkout's 10s "
        "client timeout, whose error path leaked open DB transactions and exhausted the "
        "connection pools",
    ),
    (
        "finding",
        ("FINDING_PAXIO",),
        "Paxio confirmed a degradation of its 3DS service in eu-central",
    ),
    (
        "mitigation",
        ("MITIGATION_IDLE_TIMEOUT",),
        "idle_in_transaction_session_timeout set to 60s for the checkout_app role",
    ),
    (
        "decision",
        ("DECISION_CONFIG_LOCK", "CONFIG_LOCKED"),
        "payments-config stays locked on r811 until it has a canary stage",
    ),
    (
        "next_step",
        ("NEXT_STEPS", "NEXT_CANARY", "NEXT_TX_FIX"),
        "Follow-ups: transaction rollback fix and gateway call out of the transaction, canary for "
        "payments-config, timeout lint and Paxio SLA, pool and idle-in-transaction alerts, idle "
        "timeout, customer follow-up, postmortem doc (owners assigned)",
    ),
    (
        "next_step",
        ("NEXT_POSTMORTEM",),
        "Postmortem review scheduled for Wednesday 10:00 CET",
    ),
    (
        "recovery",
        ("RECOVERY_RESOLVED", "STATUS_RESOLVED"),
        "Incident resolved after half an hour at baseline; status page set to resolved",
    ),
)


_NEGATIVE: Final[tuple[Negative, ...]] = (
    (
        "decision",
        "DECISION_IC",
        "An acknowledgement: the commander answers the page and takes the role, and gives nobody "
        "anything to do. The decision (who commands, who does what) is the roster that follows.",
    ),
    (
        "decision",
        "AGREE_US_ERRORS",
        "Agreement with the reply before it: 'that' points at someone else's message, so the "
        "sentence has no subject and no action of its own. Nothing was decided.",
    ),
)
"""Messages that must not be drafted as an entry of the kind on their own (category, label,
why): bench/quality counts a draft of that kind resting on nothing else."""


ENGLISH: Final = ChatSpec(
    files=CHATS[DemoChat.EN],
    seed=SEED,
    start=START,
    people=PEOPLE,
    story=_story,
    expected=_EXPECTED,
    negatives=_NEGATIVE,
)
SPECS: Final = {DemoChat.EN: ENGLISH, DemoChat.ZH: CHINESE}


# --- output ----------------------------------------------------------------------------------


def open_id(person: str) -> str:
    return script.open_id(ENGLISH, person)


def build() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The English chat's list items in creation order, and its labels resolved to ids."""
    return script.build(ENGLISH)


def expected_facts(ids: dict[str, str]) -> list[dict[str, Any]]:
    """The English expected timeline with ids, in the order the facts first came up."""
    return script.expected_facts(ENGLISH, ids)


def negative_examples(ids: dict[str, str]) -> list[dict[str, Any]]:
    """The English negative examples with ids, in chat order."""
    return script.negative_examples(ENGLISH, ids)


def render(chat: DemoChat = DemoChat.EN) -> tuple[str, str, str]:
    """A chat's three files' text: the chat JSONL (user lines first), the expected facts JSON
    and the negative examples JSON."""
    return script.render(SPECS[chat])


def write(directory: Path) -> list[Path]:
    """Every bundled chat's three files, written into `directory`."""
    return [path for spec in SPECS.values() for path in script.write(spec, directory)]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out",
        type=Path,
        default=chat_path().parent,
        help="directory to write into (default: the package's own demo_data directory)",
    )
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
