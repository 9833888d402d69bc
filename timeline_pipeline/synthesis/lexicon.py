"""The incident-chat vocabulary the rule synthesizer scores sentences with.

Kept apart from the scoring code so that a reviewer can read (and argue with) the vocabulary in
one place. The cues are general English incident language (what on-call engineers write about
impact, findings, actions and recovery in any system), not phrases from a particular incident.
Chinese and mixed Chinese-English cues are a table of their own (`lexicon_zh.toml`, read by
`lexicon_zh`), applied to sentences with Chinese in them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from timeline_pipeline.synthesis.contract import Category

__all__ = [
    "ACKNOWLEDGED_ROLE",
    "ACK_WORDS",
    "ALTERNATIVES",
    "APPROVAL",
    "ASK",
    "BACK_REFERENCE",
    "BAD_METRIC",
    "BARE_OPENER",
    "BOT_NOTIFICATION",
    "BUSINESS_METRIC",
    "CATEGORY_CUES",
    "CATEGORY_PRIORITY",
    "COMMS",
    "COORDINATION",
    "FRONTED_REASON",
    "HEDGE",
    "INTENT",
    "LEADING_ASIDE",
    "MIN_ROSTER_ROLES",
    "NEGATION",
    "OPENING_ACTION",
    "OWNERSHIP_CLAIM",
    "PARTIAL",
    "PENDING",
    "POPULATION",
    "PROPOSAL",
    "REPORTS",
    "REQUEST",
    "ROSTER_COMMAND",
    "ROSTER_ROLE",
    "RUNNING_STATUS",
    "SCHEDULING",
    "SOCIAL",
    "SPECULATION",
    "STATUS_WORDS",
    "STRUCTURAL_CUES",
    "TECHNICAL_TOKEN",
    "UNIT_MEASURE",
    "VALUE_CHANGE",
    "Cue",
]


@dataclass(frozen=True)
class Cue:
    """A pattern and how strongly it suggests its category."""

    pattern: re.Pattern[str]
    weight: float


def _cues(weight: float, *patterns: str) -> tuple[Cue, ...]:
    return tuple(Cue(re.compile(p, re.IGNORECASE), weight) for p in patterns)


_FAILURE = (
    r"(?:can'?t|cannot|unable|fail\w*|errors?|not (?:receiv|get|able|load|see)\w*|"
    r"didn'?t (?:get|receive)\w*|complain\w*|affected|impacted|stuck|broken|charged|"
    r"time ?outs?|timing out|slow|500s?|5xx|blank|empty|missing|lost|losing|wrong|"
    r"incorrect|down|unavailable|unreachable|degraded|never (?:got|get|received|receive)|"
    r"double[- ]charged|charged twice)"
)
_POPULATION = (
    r"(?:customers?|users?|merchants?|shoppers?|buyers?|tenants?|people|accounts?|"
    r"everyone|everybody)"
)

_ACTION_STEMS = (
    r"revert|restart|reboot|redeploy|reload|renew|rotat|re-?issu|replac|resiz|upgrad|downgrad|"
    r"evacuat|quarantin|isolat|re-?index|re-?queu|backfill|reprocess|promot|drain|cordon|"
    r"disabl|enabl|purg|flush|clear|delet|patch|kill|paus|terminat|rerout|redirect|"
    r"bounc|recycl|suspend|resum|void|refund|replay|captur|re-?sen[dt]|migrat|provision"
)
"""Stems of the verbs that act on a system; with -ed or -ing they report an action taken."""

_ACTION_NOUNS = (
    r"roll-?back|restart|reboot|fail-?over|roll-?out|revert|purge|migration|"
    r"fix|hot-?fix|patch|re-?index|backfill|clean-?up|rebuild|reconciliation|drain|switch(?:over)?"
)
"""Actions as nouns: they report an action when a state follows ("rollback done")."""

_ACTION_BASE = (
    r"roll\s+(?:[\w.-]+\s+){0,3}?back|rollback|revert|restart|reboot|fail\s?over|failover|"
    r"promote|scale|drain|disable|enable|turn (?:off|on)|switch|flip|block|purge|flush|clear|"
    r"delete|reset|patch|hotfix|deploy|apply|raise|increase|bump|kill|pause|terminate|"
    r"reroute|redirect|rebuild|void|refund|capture"
)
"""The plain form of those verbs: an order, an intention or an option."""

_METRIC = (
    r"(?:p\d{2,3}|latency|cpu|memory|heap|iops|io ?wait|lag|error rate|5xx|4xx|"
    r"throughput|rps|qps|connections|conns|threads|pool|queue|backlog|disk|load|quer(?:y|ies)|"
    r"calls?)"
)
_BAD_METRIC = (
    r"(?:p\d{2,3}|latency|cpu|memory|heap|iops|io ?wait|lag|error rate|errors|5xx|4xx|"
    r"timeouts|connections|conns|queue|backlog|load)"
)
"""Metrics where up is bad: "latency is way up" is a symptom, "success rate is up" is not."""
_MEASURE = (
    r"(?:~?\d[\d,.]*\s?(?:%|ms|s|sec|secs|seconds|min|mins|minutes|h|hours?|k|gb|mb)(?![\w-])|"
    r"\d+\s?/\s?\d+)"
)
"""A metric and a measurement of it in one sentence is an observation read off a dashboard."""

_NAME = r"(?<![\w./-])[a-z][a-z0-9]*(?:[-_./][a-z0-9]+)+"
r"""A named system: parts joined by separators ("orders-db", "api.partner-x.com", "b-4"). Each
character belongs to exactly one part or separator, so a long pasted token is read in one pass
(a looser "[\w]*[-_./][\w./-]*" backtracks cubically on it)."""

CATEGORY_CUES: dict[Category, tuple[Cue, ...]] = {
    Category.ROOT_CAUSE: (
        *_cues(
            6.0,
            r"\broot[\s-]?caus",
            r"\bcaused by\b",
            r"\bculprit\b",
            r"\b(?:the|a) (?:real |actual )?(?:trigger|cause)\b",
            r"\btriggered by\b",
            r"\b(?:that|this)(?:'s| is| was) (?:why|what (?:caused|broke|triggered))\b",
            r"\bwhich (?:is|was|explains) why\b",
            r"\bcontributing factor",
        ),
        *_cues(
            1.5,
            r"\bbecause\b",
            r"\bdue to\b",
            r"\bintroduced (?:by|in)\b",
            r"\bregression\b",
            r"\bresult(?:ed)? (?:of|from)\b",
        ),
    ),
    Category.RECOVERY: (
        *_cues(
            3.5,
            r"\bback (?:to|under|below|at|within) "
            r"(?:normal|baseline|zero|empty|the [\w.%~ ]*baseline|"
            r"[~<]?\d+(?:\.\d+)?\s?(?:%|ms\b|s\b|x\b))",
            r"\b(?:normally|fine|ok|properly|as expected) again\b",
            r"\b(?:flowing|running|processing|serving|succeeding|completing|loading) "
            r"(?:\w+ )?again\b",
            r"\b(?:everything|all)(?:'s| is) (?:green|good|fine|healthy|back)\b",
            r"\bclos(?:e|ing) (?:this|the incident|it out)\b",
            r"\b(?:has |have |is |are )?(?:fully )?(?:recovered|restored)\b",
            r"\b(?:healthy|green|stable|normal|fine) again\b",
            r"\bworks? again\b|\bworking again\b",
            r"\b(?:resolv|clos|mitigat)(?:ed|ing) the incident\b",
            r"\bincident (?:is |as )?(?:now )?(?:resolved|mitigated|closed|over)\b",
            r"\bmark(?:ing|ed)? (?:the |their |its )?incident (?:as )?"
            r"(?:resolved|mitigated|closed)",
            r"\b(?:basically|almost|nearly|back to) normal\b|\bnormal levels?\b",
            r"\b(?:has|have) been (?:flat|stable|steady|healthy|green|clean|at (?:0|zero))\b",
            r"\bsteady at\b|\bflat at\b|\bstable at\b",
            r"\b(?:is|are) gone\b",
            r"\bcaught up\b|\ball good\b|\b(?:is|are|'s) fixed\b|\bfixed now\b",
            r"\b(?:is|are|'s|looks?) (?:all )?(?:good|green|healthy|fine) now\b",
            r"\b(?:lag|errors?|backlog|queue|5xx|failures?|timeouts?)\b[^.?!]*\b(?:is|are|at) "
            r"(?:0|zero|empty)(?![.,]?\d)",
            r"\b(?:at|to|is|that'?s|reached|hit) (?:the |our )?(?:[\w-]+ )?baseline\b",
            r"\bback to (?:where it was|what it was|pre-incident|usual|expected|its usual)\b",
            r"\bno new (?:tickets|chats|errors|alerts|complaints|reports|failures|timeouts)\b",
            r"\btest (?:orders?|payments?|logins?|requests?|transactions?|purchases?|messages?|"
            r"calls?|signups?)\b[^.?!]*\b(?:succeed\w*|confirmed|passed|worked|went through)\b",
            r"\b(?:errors?|timeouts?|failures?|5xx|[45]\d\ds|alerts?|crash\w*|exceptions|"
            r"complaints|tickets|chats)\b[^.?!]*\b(?:stopped|gone|disappeared|cleared up)\b",
        ),
        *_cues(
            3.0,
            r"\b(?:is|are|'s)\s+(?:basically |mostly |almost |fully |all )?back\b"
            r"(?!\s+(?:on|in|to|at|under|from|up|below|within))",
        ),
        *_cues(
            2.5,
            r"\b(?:errors?|error rate|5xx|4xx|latency|failures?|timeouts?|lag|backlog|queue|"
            r"ratio|rate|tickets|chats|complaints|calls|volume)\b[^.?!]*\b(?:dropping|dropped|"
            r"going down|coming down|decreasing|falling|slowing(?: down)?)\b",
            r"\b(?:improving|recovering|subsiding|stabili[sz]ing)\b",
            r"\bsuccessfully\b|\bsucceed(?:ed|s|ing)\b",
            r"\bsuccess rate\b[^.]*\b(?:up to|back|at) \d",
            r"^verified\b|\b(?:i|we|have|has|just) verified\b|\bverified (?:that|it|again)\b",
            r"\bconfirmed (?:fixed|working|good|healthy)\b",
        ),
    ),
    Category.MITIGATION: (
        # An action on a system in the past or in progress: it happened, or is happening.
        *_cues(
            3.5,
            # Not "was redeployed at 10:35": a change reported with its time is a finding.
            # Nor "the patched image": after a determiner the participle describes a thing.
            r"(?<!\bwas )(?<!\bwere )(?<!\bthe )(?<!\ba )(?<!\ban )(?<!\bthis )(?<!\bthat )"
            rf"(?<!\bthese )(?<!\bthose )\b(?:{_ACTION_STEMS})(?:ed|ing)\b(?!\s+on\b)",
            r"\broll(?:ed|ing)[\s-]+(?:[\w.-]+\s+){0,3}?back\b",
            r"\bfail(?:ed|ing)[\s-]?over\b|\bswitchover\b",
            r"\b(?:ran|rerun|re-ran)\b",
            r"\bscal(?:ed|ing)\b",
            r"\badd(?:ed|ing) (?:more |an? |the )?(?:capacity|nodes?|replicas?|index|rule|limit|"
            r"retry|retries|timeout|cache)",
            r"\bturn(?:ed|ing) (?:off|on)\b",
            r"\bswitch(?:ed|ing) (?:\w+ )?(?:to|back|over|off)\b|\bis back on\b",
            r"\bflag [\w.-]+ (?:set|flipped|changed)\b|\bset to [\w.-]+\b",
            r"\bbann(?:ed|ing)\b|\bflipp(?:ed|ing)\b|\bstopp(?:ed|ing) (?:the|all|our)\b",
            # "blocked the IP range", not "threads blocked on a lock" or "no blocking locks".
            r"\bblocked\b(?!\s+on\b)|\bblocking (?:the|all|our|their|traffic|access|ips?|users)\b",
            r"\b(?:carts?|jobs?|sessions?|keys?|caches?|records?) reset\b|\breset (?:the )?\d",
            r"\bdeploy(?:ed|ing) (?:the |a )?(?:fix|patch|hotfix)\b",
            r"\bappl(?:ied|ying)\b",
            r"\brunning [\w./-]+\.(?:py|sh|sql)\b|\bdry[- ]run\b",
            r"\b(?:ran|running) (?:the |a )?[\w -]*(?:script|job|migration)",
            r"\b(?:raised|increased|bumped|doubled) (?:our |the )?[\w -]*"
            r"(?:limit|capacity|pool|quota)",
            # Changing a setting: "bumped the replica count to 12" (not "latency increased").
            r"\b(?:raised|increased|bumped|doubled|halved|lowered|reduced|decreased|changed)\s+"
            r"(?:the|our|its|their)\b",
            r"\brate[- ]limit(?:ed|ing)\b",
            r"\bthrottl(?:ed|ing) (?:the |our )?(?:traffic|jobs|clients)",
            r"\bopened (?:a|an) (?:ticket|case|support request)\b|\bescalat(?:ed|ing) to\b",
            r"\bshift(?:ed|ing) traffic\b",
            r"\b(?:traffic|requests|load|users) (?:is |are |was |were )?(?:shifted|moved|drained|"
            r"routed|sent|pinned)\b",
            r"\brebuil(?:t|ding)\b|\bre-?provision",
            r"\bpods? restarted\b",
        ),
        # An action named as a noun with its state: "rollback done", "started the restart".
        *_cues(
            3.5,
            rf"\b(?:{_ACTION_NOUNS})\b[^.?!]{{0,30}}?\b(?:done|complete[d]?|finished|started|"
            r"underway|in progress|at \d+\s?%|\d+\s?% (?:done|complete)|kicked off|succeeded|"
            r"went through)(?![\w-])",
            r"\b(?:start(?:ed|ing)|kick(?:ed|ing) off|began|finish(?:ed|ing)|complet(?:ed|ing)|"
            rf"trigger(?:ed|ing)) (?:the |a |an )?(?:[\w-]+ ){{0,2}}?(?:{_ACTION_NOUNS})\b",
        ),
        # The action is what the sentence opens with: "purged 118k jobs, queue at 900 now".
        *_cues(
            1.5,
            r"^(?:(?:i|we|i'?ve|we'?ve|just|have|has|now|also|then|and)\s+)*"
            rf"(?:(?:{_ACTION_STEMS})(?:ed|ing)|roll(?:ed|ing)\s+(?:[\w.-]+\s+){{0,3}}?back|"
            r"fail(?:ed|ing)\s?over|scal(?:ed|ing)|turn(?:ed|ing)\s+(?:off|on)|switch(?:ed|ing)|"
            r"ran|running|bump(?:ed|ing)|rais(?:ed|ing)|increas(?:ed|ing)|add(?:ed|ing)|"
            r"start(?:ed|ing))\b",
        ),
        # The plain verb or noun: an intention, an order or an option, not yet an action.
        *_cues(1.5, rf"\b(?:{_ACTION_BASE})\b"),
        # An order to someone ("Sam, please disable the job") is an action being taken.
        *_cues(
            1.5,
            rf"\b(?:please|pls|plz)\b[^.?!]*\b(?:{_ACTION_BASE})\b",
            rf"\b(?:{_ACTION_BASE})\b[^.?!]*\b(?:please|pls|plz)\b",
        ),
        # A completion report: "done, cron disabled", "done: 212 rows".
        *_cues(2.0, r"^done\b(?![\s:.,!-]*['\"\u2018\u201c])[\s:.,!-]*\S"),
        *_cues(
            1.0,
            r"\b(?:done|complete(?:d)?|finished|started|in progress|kicked off)\b",
            r"\bat \d{1,3}%$",
        ),
    ),
    Category.DECISION: (
        # An explicit label is the author telling us what the message is.
        *_cues(8.0, r"^(?:decision|decided|we decided)\s*[:-]"),
        *_cues(
            3.5,
            r"\bdecision\b|\bdecided\b|\bwe(?:'re| are) going to\b",
            r"\bi'?m (?:the )?(?:ic|incident commander|incident lead)\b",
            r"\b(?:i'?ll|i will|let me) take (?:ic|command|incident command|the lead|lead)\b",
            r"\btaking (?:over )?(?:ic|command|incident command|the lead)\b",
            r"\bplan(?: is)?:",
            r"\bfix forward\b|\broll forward\b",
            r"\bno objection",
            r"\bis (?:the |our )?(?:ic|incident commander|incident lead)\b",
            r"\b(?:will own|owns|is owning|takes over|will take over|will lead|is leading)\b",
            r"\b(?:we(?:'re| are) )?going with\b",
            r"\bwe(?:'ll| will) (?:keep|stay|hold|leave|not|proceed|fail|switch|roll|revert|ship|"
            r"freeze|pause|stop)\b",
            r"\b\w+ on (?:the )?[\w-]+(?: side| service| team)?, \w+ on\b",
        ),
        *_cues(
            4.5,
            r"^(?:ok(?:ay)?|yes|yep|alright|right)[,.]? (?:let'?s )?(?:roll|switch|fail|revert|"
            r"disable|enable|restart|block|keep|proceed|freeze|pause|stop|move)\b",
            r"^(?:agree[d]?|approved|ok(?:ay)?|yes|yep|fine|alright)\b[\s,.!:]+(?:go\b|let'?s\b|"
            r"do it\b|ship it\b|proceed\b|we (?:go|do|proceed)\b)",
        ),
        *_cues(
            3.0,
            r"\blet'?s (?![a-z]+ (?:it|this|that|them) (?:in|on|to|into|for|at)\b)"
            r"(?:go with|proceed|switch|roll|fail|move|keep|revert|disable|enable|block|"
            r"fix|ship|try|hold off|freeze|pause|stop)\b",
            r"\buntil then\b|\buntil [\w ]+ (?:is|has been) (?:stable|fixed|resolved|healthy)\b",
            r"\bno (?:re)?deploys?\b|\bcode freeze\b|\bfreeze (?:all )?deploys\b",
        ),
    ),
    Category.IMPACT: (
        *_cues(
            3.5,
            rf"\b{_POPULATION}\b[^.?!]*\b{_FAILURE}",
            rf"\b{_FAILURE}\b[^.?!]*\b{_POPULATION}\b",
        ),
        *_cues(
            5.0,
            r"\b\d+(?:\.\d+)?\s?%\s+of\b[^.?!]*\b(?:fail\w*|error\w*|returning [45]\d\d|5xx|500s?|"
            r"timing out|time out|broken)",
            r"\b(?:fail\w*|error\w*|dropping|losing|rejecting|timing out)\b[^.?!]*"
            r"\b\d+(?:\.\d+)?\s?% of\b",
        ),
        *_cues(
            3.5,
            # Not "denied PutObject calls from the worker role": calls are people's only when
            # they are not named after an API (a CamelCase or dotted name just before them).
            r"\b(?:tickets?|complaints?|chats?|reports?) (?:from|about)\b|\bflood of\b",
            r"(?:^|(?-i:(?<!\S)(?![A-Z]?[a-z]+[A-Z]\w*\s)\S+\s+))calls? (?:from|about)\b",
            r"\bfailed [\w-]+ (?:attempts|requests|orders|payments|logins)\b",
            r"\b(?:signups?|sign-ups?|logins?|sign-ins?|checkouts?|payments?|orders?|purchases?|"
            r"uploads?|downloads?|deliveries|bookings?|transfers?) (?:are|is) (?:broken|failing|"
            r"down|blocked|stuck|unavailable)\b",
            r"\blos(?:ing|t) (?:about |roughly |around |~)?\d[\d,.]*k? \w+",
        ),
        *_cues(
            2.0,
            r"\b(?:outage|degraded|impact(?:ed)?|affected|unavailable|down for)\b",
            r"\bspike (?:of|in) (?:500s|errors|5xx|failures)\b|\b(?:500s|errors|5xx) spik",
            r"\blost (?:orders|revenue|sales|transactions)\b",
        ),
        *_cues(
            3.5,
            # A business metric falling: orders, revenue, conversions are what users did not do.
            r"\b(?:orders?|checkouts?|signups?|sign-ups?|logins?|payments?|revenue|sales|"
            r"conversions?|bookings?|purchases?|gmv)(?:/(?:min|minute|s|sec|h|hour|day))?\b"
            r"[^.?!]*\b(?:down|dropp\w*|fell|falling|behind|below|lower|tank\w*|plummet\w*|"
            r"off a cliff|halved)\b",
            # People telling us something is wrong for them.
            r"\b(?:saying|say|says|report(?:ing|s)?|complain\w*|telling us)\b (?:that )?"
            r"(?:they|their|she|her|he|his)\b",
            r"\b\d[\d,.]*\+?\s*(?:[\w-]+\s+)?(?:tickets|chats|complaints|calls|emails)\b|"
            r"\b(?:ticket|chat|complaint|call) (?:count|volume)\b[^.?!]*\d",
        ),
        *_cues(
            2.5,
            # Counted people or business objects: the size of the impact.
            r"\b~?\d[\d,.]*k?\+?\s+(?:[\w-]+\s+)?(?:customers|users|orders|payments|accounts|"
            r"transactions|checkouts|bookings|merchants|signups|logins|purchases)\b",
        ),
        *_cues(2.0, r"[€$£]\s?~?\d[\d,.]*k?\b|\b\d[\d,.]*k?\s?(?:eur|usd|gbp)\b"),
        *_cues(-5.0, r"\bno (?:customer |user |external )?impact\b"),
    ),
    Category.FINDING: (
        *_cues(
            2.0,
            r"\blooks? like\b|\bseems?\b|\bappears? to\b|\bturns? out\b|\bfound\b",
            r"\bnoticed?\b|\bidentified\b|\bconfirmed that\b|\bmatches\b",
            r"\b(?:logs?|stack ?traces?|traces|metrics|graphs?|dashboards?|profiles?) "
            r"(?:show|say|point|indicate)",
            r"^(?:logs?|stack ?traces?|traces|metrics)\b",
            r"\b\w*(?:exception|panic|segfault|oom\w*|deadlock\w*)\b",
            r"\bsince \d",
            r"\bcorrelat\w*",
            r"\b(?:timing out|times? out|timed out|throttled|exhausted|saturated|piling up|leak\w*|"
            r"backlog|growing|lagging)\b",
            r"\b(?:hit|hits|hitting|reached|reaching|exceed\w*) "
            r"(?:the |their |our |a )?[\w /]*limit",
            r"\b(?:is|are) at \d|\breturning \d{3}\b",
            r"\bstatus page (?:says|shows|reports|mentions)\b",
            r"\b(?:configured|cach(?:es|ed|ing)|expects?|resolves?)\b",
            r"\bdoesn'?t (?:have|re-?\w+)\b|\bnever (?:re-?\w+|changed|moved)\b",
            r"\b(?:is|are) unhealthy\b",
            r"\b(?:comes?|came) from\b|\bis from (?:pr|commit|change)\b|\b(?:pr|commit) #?\d+",
            r"\bsame (?:error|stack|symptom)|\bdifferent error\b",
            r"\b(?:checked|inspected|profiled|traced|reproduced|bisected)\b",
            r"\b(?:seeing|we see|i see|observing|observed)\b",
            r"\bstarted (?:around|about|right after|after|at|when)\b",
            r"\b(?:\d+|a few|two|three|several|an?) (?:min|mins|minutes|hours?|days?) ago\b",
            r"\b(?:expired|jumped|spiked|climbing|rising|elevated|unreachable|refused|resets?|"
            r"crash\w*|evicted|oom\w*|stuck|hung|flapping|saturat\w*)\b",
            r"\bfrom [~]?\d[\w.%]* to (?:~|almost |about |around |over |nearly |under |roughly )?"
            r"\d[\w.%]*",
            # A metric read off a dashboard: a metric name and a measurement.
            rf"\b{_METRIC}\b[^.?!]*?{_MEASURE}|{_MEASURE}[^.?!]*?\b{_METRIC}\b",
            rf"\b{_BAD_METRIC}\b[^.?!]*\b(?:is|are|'s|went|got)\s+(?:way |much |really |very |"
            r"significantly )?(?:up|high|higher|elevated|through the roof)\b",
            r"\b(?:tons|lots|loads|a lot|plenty|bunch|hundreds|thousands) of\b[^.?!]*"
            r"\b(?:errors?|timeouts?|exceptions?|5xx|500s|failures?|retries|rejects?)\b",
            # Counted system objects: "212 sessions idle in transaction".
            r"\b~?\d[\d,.]*k?\s+(?:[\w-]+\s+)?(?:sessions|connections|conns|threads|requests|"
            r"jobs|messages|pods|nodes|queries|locks|processes|workers|backends|rows|keys)\b",
            r"\b(?:shipped|deployed|pushed|merged|released|went out)\b[^.?!]*"
            r"\b(?:ago|before|earlier|yesterday|this morning)\b",
            r"\binstead of\b|\bsupposed to\b|\bmeant (?:for|to)\b|\bintended (?:for|to)\b|"
            r"\bmismatch|\bmisconfigur\w*|\bwrong\b",
            r"\b(?:is|are|was|were|got|went) full\b|\b(?:disk|volume|queue|pool) full\b",
        ),
        # What a change did: "the new release raised the batch size" (a person raising it is an
        # action, a release raising it is a finding about the release).
        *_cues(
            3.5,
            r"\b(?:release|pr|change|commit|deploy|migration|config|upgrade|version|rollout)\s+"
            r"(?:#?[\w.-]*\d[\w.-]*\s+)?(?:raised|increased|changed|set|moved|removed|added|"
            r"dropped|bumped|lowered|introduced|enabled|disabled|switched|broke)\b",
        ),
        # A measurement set against its baseline: "9 to 12 seconds, against about 80ms
        # yesterday", "a median of 11 minutes vs 2 minutes normally".
        *_cues(
            2.0,
            r"\d[\d,.]*\s?(?:%|ms|s|k|sec\w*|min\w*|h|hours?)?[^.?!]{0,30}?\b(?:against|vs\.?|versus|"
            r"compared (?:to|with)|up from|down from)\s+(?:about |around |roughly |~|the usual )?"
            r"\d[\d,.]*",
        ),
        # A numbered change did something: "infra-iam #7731 at 09:11 rewrote the role policy",
        # "shipped tax-svc 3.14 at 14:01".
        *_cues(
            3.5,
            r"(?:#\d+|\bv?\d+\.\d+(?:\.\d+)*)\b(?:\s+at\s+\d{1,2}:\d{2})?\s+(?:[a-z]+ed|rewrote|"
            r"broke|took|made|threw|wrote|ran|drove|overwrote|removed)\b",
            r"\b(?:shipped|deployed|released|pushed|merged|rolled out)\s+[\w.-]+\s+v?\d+(?:\.\d+)+"
            r"\s+at\s+\d{1,2}:\d{2}\b",
        ),
        # A third party confirming what we see is as good as seeing it ourselves.
        *_cues(
            3.5,
            r"\b(?:support|vendor|provider)\b[^.?!]*\b(?:came back|confirmed|acknowledged|"
            r"replied)\b",
        ),
        # Timing against the incident ("10 min before the first alert") ties a change to it.
        *_cues(
            2.5,
            r"\b(?:\d+\s?(?:min|mins|minutes|m|h|hours?|s|sec|seconds)|shortly|right|just)\s+"
            r"(?:before|after)\s+(?:the\s+)?(?:first\s+|[\w.-]*\d[\w.-]*\s+)?(?:alert|page|"
            r"deploy\w*|release|incident|spike|outage|errors?|change)\b",
        ),
        *_cues(
            1.0,
            r"\b(?:failing|erroring|broken)\b",
            r"\b(?:intermittent\w*|flaky|sporadic\w*)\b",
            r"\bin the (?:logs?|traces?|metrics|dashboards?|graphs?)\b",
            r"\b[45]\d\ds?\b",
        ),
    ),
    Category.NEXT_STEP: (
        # A list header ("INC-12 follow-ups", "Action items:") is what the list is.
        *_cues(
            8.0,
            r"^[^.?!]{0,40}\b(?:follow[\s-]?ups?|action items?|next steps?|to-?dos?)\s*:?\s*$",
        ),
        *_cues(
            3.5,
            r"\bfollow[\s-]?ups?\b|\baction items?\b|\bnext steps?\b|\bto-?dos?\b",
            r"\bonce\b[^.]*\b(?:sorted|fixed|done|stable|resolved|over|recovered|back)\b",
            r"\bwe (?:need|should|must|have) to\b|\bwe should\b(?! have)|"
            r"\bneeds? to be (?:fixed|added)\b",
            # People blocked on something; threads "blocked on a lock" are an observation.
            r"\b(?:we'?re|we are|i'?m|i am|we'?ve been|still|currently)\s+blocked on\b|"
            r"\bblocker\b",
            r"\b(?:file|open|create) (?:a |an )?(?:ticket|jira|issue) (?:for|to)\b",
        ),
        # An action put off to a time or a condition: "i'll put the timeout back to 2s in 30 min
        # if it stays clean", "we'll restore retention tomorrow once disks settle".
        *_cues(
            4.0,
            r"^(?:i'll|we'll|i will|we will)\b[^.?!]*\b(?:in \d+ ?(?:min|mins|minutes|h|hours?)\b|"
            r"tomorrow|tonight|later today|next week|on monday|after (?:the |it |we )|if it stays)",
        ),
    ),
}

_OBSERVATION_VERBS = (
    r"noticed|found|checked|confirmed|looked|seemed|saw|failed|crashed|spiked|jumped|dropped|"
    r"started|expired|evicted|throttled|timed|erred|errored|exceeded|reached|hit|got|went|"
    r"came|turned|showed|needed|wanted|asked|told|posted|sent|said|thought|guess(?:ed)?|"
    r"tried|missed|happened|changed|moved|merged|shipped|deployed|released|introduced|added|"
    r"used|called|caused|broke|stopped|worked|looked|assumed|expected|listed|paged|pinged|"
    r"joined|acked|acknowledged|agreed|approved|decided|updated|noted|"
    # Verbs of looking: the author examined a system, the result is what they found.
    r"traced|inspected|profiled|reproduced|bisected|measured|compared|verified|investigated|"
    r"grepped|searched|reviewed|examined|analy[sz]ed|tested|sampled|queried|watched|counted"
)
"""Past-tense verbs that report what was seen or said, not an action someone took on a system."""

_COUNT_OR_MEASURE = (
    r"(?:\b\d+\s?/\s?\d+\b|\b\d[\d,.]*\s?(?:%|ms|s|k|m|g|gb|mb|tb|x|qps|rps|/s)(?![\w-])|"
    r"\b(?:all|every|both) (?:\d+ )?[\w-]+s\b|\b\d[\d,.]*k?\s+[a-z][\w-]*s\b)"
)
"""A count or a measurement: what an action reports when it says how far it got."""

_HISTORY = r"(?![^.?!]*\b(?:last (?:week|month|quarter|year)|yesterday|back in|years? ago)\b)"
"""Not a change told as history ("we pinned it there last quarter"): that is a finding."""

OPENING_ACTION = re.compile(
    rf"^(?:(?:i|we|i'?ve|we'?ve|just|also|then|and|now)\s+)*(?!(?:{_OBSERVATION_VERBS})\b)"
    # Not a name that ends like a verb ("memcached cpu at 97%"): an action has an object.
    r"[a-z]{3,}ed\b(?!\s+(?:by|to me|out|cpu|memory|mem|latency|p\d+|is|are|was|were|at|"
    r"has|have|on|in|for|and|\d+\s?%)\b)(?=\s+\S)"
    rf"{_HISTORY}",
    re.IGNORECASE,
)
"""A sentence opening with a past-tense verb: in terse chat, what the author did to a system."""

STRUCTURAL_CUES: dict[Category, tuple[Cue, ...]] = {
    # Cues that do not depend on a topic's vocabulary: how a sentence is built (who acts, in
    # which tense, with which connective, on what measurement). The Chinese ones are in
    # `lexicon_zh.toml`.
    Category.ROOT_CAUSE: (
        # "X is because Y", "that happened because", "memory grows because ...".
        *_cues(
            4.5,
            r"\b(?:is|was|are|were|'s|grows?|happen(?:s|ed)|fail(?:s|ed)|broke|breaks|"
            r"crash(?:es|ed)|stopp?(?:s|ed)|hangs|hung) because\b",
        ),
        # "the job ran twice after the scheduler failover": a consequence of a change.
        *_cues(
            4.5,
            r"\b(?:ran|broke|leak\w*|duplicat\w*|went down|fell over|filled up|corrupt\w*)\b"
            r"[^.?!]*\bafter "
            r"(?:the |a |an |our |their )?[\w.-]*\s?(?:failover|deploy\w*|release|upgrade|"
            r"migration|merge|rollout|change|restart|cleanup|rotation)\b",
        ),
        # A failure and its reason in one sentence: "the consumers crash because the binary ...",
        # "replay has been paused since 08:50 because ...".
        *_cues(
            4.5,
            r"\b(?:crash\w*|fail\w*|broke|break\w*|stopp?\w*|stall\w*|stuck|hang\w*|hung|"
            r"die[sd]?|dying|time[sd]? out|timing out|block\w*|wait\w*|paused|rejected|denied|"
            r"lost|missing)\b[^.?!]{0,80}\b(?:because|due to|as a result of)\b",
        ),
        # A reason put first, then what it led to: "Because the flag is off, replay waits ...".
        *_cues(6.0, r"^(?:because|due to|as a result of)\b[^.?!]{10,}?,\s*\S"),
        # Saying that the explanation follows: "I found why the replica stopped", "the chain is".
        *_cues(
            6.0,
            r"\b(?:found|know|see|figured out|understand) why\b",
            r"\b(?:the )?(?:causal )?(?:chain|sequence)(?: of events)? is\b",
        ),
        # What was learnt overturns what was assumed: "turns out the opts block was copied".
        *_cues(4.5, r"\bturn(?:s|ed) out\b(?! (?:to be )?(?:fine|ok|okay|nothing|unrelated)\b)"),
        # The author owning the change that did it: "that would be us, sorry", "my bad".
        *_cues(
            6.0,
            r"\b(?:my|our) (?:bad|fault|mistake)\b|\bthat(?:'s| was| would be) (?:on )?(?:me|us)\b",
        ),
    ),
    Category.DECISION: (
        # First-person plural commitments: "we'll go with the manual cert now".
        *_cues(
            3.5,
            # Not a prediction inside a condition ("if it keeps growing we will lose messages").
            r"^(?!(?:so\s+)?(?:if|unless|once|when|otherwise)\b)(?![^.?!]*\bif\b)[^.?!]*?"
            r"\bwe(?:'ll| will) (?!(?:see|know|need|have|update|post|let|try|probably|likely|get|"
            r"be|want|look|check|watch|monitor|figure|keep an eye|circle|follow|lose|break|fail|"
            r"run out|hit|miss|end up|answer|reply|respond|tell|email|notify|send|write|"
            r"message|inform)\b)[a-z]+\b",
        ),
        # Taking the incident-commander role, however it is phrased: "elena IC", "我是 IC".
        *_cues(3.5, r"\b(?:the )?plan is to\b"),
        *_cues(3.5, r"(?-i:\S\s+IC\b(?![?\uff1f])|^IC\s+(?!:)\S)"),
        *_cues(3.5, r"(?-i:^IC\s*:\s*(?:me|I|myself|@?[A-Z]\w+)\b(?![^.?!]*\?))"),
        # Terse chat takes the role in lower case: "i'll ic", "i'm ic, sato keep digging".
        *_cues(
            3.5,
            r"^(?:ok(?:ay)?[,.]?\s+)?(?:i'll|i will|i'm|i am)\s+(?:be\s+|take\s+)?(?:the\s+)?ic\b",
        ),
        # Coordinating the incident: "I'll coordinate this", "I'll run point".
        *_cues(
            3.5,
            r"\b(?:i'?ll|i will|let me) (?:coordinate|run point|drive|lead|run) "
            r"(?:this|the incident|the response|it|on this)\b",
        ),
        # "Let's <verb> ..." is a decision, except for watching or looking further.
        *_cues(
            3.5,
            # Not talk about the talk: "let's keep it in this thread", "let's put it on the list".
            r"\blet'?s (?!(?:see|check|look|wait|watch|monitor|keep (?:watching|an eye)|hold here|"
            r"find|figure|dig|try to|think|discuss|talk|sync|regroup|get|take a|not|first)\b)"
            r"(?![a-z]+ (?:it|this|that|them) (?:in|on|to|into|for|at)\b)[a-z]{3,}\b",
        ),
        # Settling the options just discussed: "ok config revert only", "ok. retention 12h now,
        # leave app.logs". An "ok" then looking, thanks or a question is not a course chosen.
        *_cues(
            3.5,
            r"^(?:ok(?:ay)?|fine|agreed|alright)[.,!]?\s+(?!(?:so|thanks|thx|ty|looking|checking|"
            r"i|i'm|i'll|we|let|on|cool|got|sure|will|np|yes|yep|no|now)\b)(?:[\w./+-]+\s+){1,4}?"
            r"(?:only|now|first|instead)\b(?![^.?!]*\?)",
        ),
    ),
    Category.MITIGATION: (
        # A sentence that opens with a past-tense verb is, in terse chat, what the author did:
        # "issued a 90d cert", "excluded the path from the rewrite".
        Cue(OPENING_ACTION, 3.0),
        # Work in progress that says how far it got: "pushing to edge pops, 3/12".
        *_cues(
            3.0,
            r"^(?:(?:i'?m|we'?re|still|now)\s+)?(?!(?:looking|checking|seeing|watching|"
            r"waiting|digging|investigating|trying|going|getting|thinking|working|reading|"
            r"grepping|searching)\b)[a-z]{3,}ing\b[^.?!]*\b\d+\s?/\s?\d+\b",
            r"\b\d+\s?/\s?(\d+)\b[^.?!]*\b(?:on|updated|rolled|migrated|moved|switched|patched)"
            r"\b",
        ),
        *_cues(3.5, r"\bfail(?:ed|ing)\s+(?:[\w.-]+\s+){1,3}?over\b"),
        # The author changing a setting: "I set max_standby_streaming_delay to 30s".
        *_cues(
            3.5,
            r"\b(?:i|we)(?:'ve| have| just)? (?:set|put|pinned|capped|pointed|moved|changed|"
            r"lowered|raised|limited|re-?enabled|re-?pointed)\b(?! (?:up|a meeting|a reminder)\b)"
            # Not a change told as history: "we pinned it there last quarter".
            rf"{_HISTORY}",
        ),
        # A change reaching a fleet: "config change deployed to all 8 pods".
        *_cues(
            3.5,
            r"\b(?:deployed|rolled out|pushed|applied|shipped) (?:out )?to (?:all )?\d+\s+[\w-]+",
        ),
        # A piece of work reported finished: "replay done, all 14,200 written".
        *_cues(3.5, r"^(?:the )?[a-z][\w-]+ (?:is |was )?(?:done|complete[d]?|finished)\b"),
        # The same report put first: "done: ALTER ROLE ... SET ...", "applied, all 12 pods".
        # Not a quoted status-page line ("done: 'A fix has been implemented ...'").
        *_cues(
            3.5,
            r"^(?:done|applied|rolled out|shipped|merged and deployed)\s*[:,;-]\s*"
            "(?![\"'\u2018\u201c])\\S",
        ),
        *_cues(1.5, r"\bon (?:all )?\d+\s?/\s?\d+\b|\bon all \d+\b"),
        # A named system in a completed state: "geo-svc is rolled back ... on all 6 pods".
        *_cues(
            2.0,
            rf"\b(?:is|are|was|were|has been|have been)\s+(?:now\s+)?(?:{_ACTION_STEMS})ed\b",
            r"\b(?:is|are|was|were|has been|have been)\s+(?:now\s+)?rolled[\s-]+back\b",
        ),
    ),
    Category.RECOVERY: (
        # A bad metric falling a long way: "handshake errors 38% -> 0.2%" (checked numerically
        # in `classify`, this only finds the shape).
        *_cues(2.5, r"\b(?:down|dropped|fell|back) to (?:~|about |under |below )?\d"),
        # A failure count falling to nothing: "put_object 403s dropped to 0 from 09:24".
        *_cues(
            3.0,
            r"\b(?:errors?|failures?|timeouts?|5xx|[45]\d\ds|rejects?|denials|crashes|restarts)\b"
            r"[^.?!]{0,40}\b(?:dropped|down|fell|went) to (?:0|zero)\b(?![.,]?\d)",
        ),
        *_cues(
            3.5,
            r"\bno (?:more|new) (?:[\w-]+ ){0,3}(?:errors?|failures?|timeouts?|rebalances|"
            r"evictions|alerts|tickets|crashes|restarts|5xx|[45]\d\ds)\b",
            r"\bno (?:[\w-]+ )?(?:errors?|failures?|timeouts?|rebalances|evictions|alerts|crashes|"
            r"restarts|5xx) (?:for|in|since) (?:the )?(?:last |past )?\d",
            r"\b(?:stopped|no longer) (?:growing|rising|increasing|climbing|failing|erroring)\b",
            # A reading set against the usual: "p99 185ms, errors 0.1%, that's baseline".
            r"\b(?:back to|back at|that's|is|are|now at|at) (?:the )?(?:usual |normal )?"
            r"(?:baseline|pre-incident levels?)\b",
            r"\b(?!is\b)[\w-]+s gone\b",
            r"\b(?:is|are|'s) [a-z]+ing\b[^.?!]*\bagain\b",
        ),
        *_cues(
            3.5,
            # A state clearing by itself ("NotReady cleared"), not someone clearing a cache.
            r"\b[\w-]+ (?:cleared|cleared up|went away|subsided)\b"
            r"(?!\s+(?:the|a|an|our|all|its)\b)",
            # The whole fleet in a good state: "48/48 workers running".
            r"\b(\d+)\s?/\s?\1\s+(?:[\w-]+\s+)?(?:running|ready|healthy|up|green|serving|"
            r"passing)\b",
            # Something working again, said any way but failing again.
            # Not in a clause that only gives the reason or the condition ("now that SMS works
            # again", "before anyone consumes again").
            r"^(?![^.?!]*\b(?:now that|since|because|before|until|when|once|if|as soon as)\b)"
            r"[^.?!]*\b(?!(?:fail|error|crash|break|brok|spik|drop|flap|stuck|tim|happen|down|go|"
            r"went)\w*\b)[a-z]+(?:s|ing)?(?: up| through| in)? again\b",
        ),
        # Nothing of a bad kind over a span: "zero full gcs in the last 10 min". An action told
        # first in the same sentence outranks it (`classify`: "pinned the image, 0 restarts in
        # the last 3 min" is the action with its result).
        *_cues(
            3.5,
            r"\b(?:zero|0) (?:[\w-]+ ){0,2}[\w-]+s (?:for|in|since|over) (?:the )?"
            r"(?:last |past )?\d",
        ),
        *_cues(2.5, r"\bshrinking\b|\b(?:below|under) (?:~)?\d[\d.,]*\s?k?\b(?! ?%)"),
    ),
    Category.IMPACT: (
        # A failure and a share of the traffic: "tls handshake failures 38%".
        *_cues(
            4.0,
            # Not when the share is moving the right way ("5xx ratio is dropping, 3% now").
            r"^(?![^.?!]*(?:正常|没\s*问题|恢复))"
            r"(?![^.?!]*\b(?:dropp\w*|down|falling|fell|back|recover\w*|only|still|now|"
            r"below|under|normal|baseline)\b)[^.?!]*\b(?:fail\w*|errors?|5xx|[45]\d\ds|timeouts?|broken)\b"
            r"[^.?!]{0,40}?\b\d+(?:\.\d+)?\s?%(?!\s*->)",
            # "~6% of searches ending on the 'try again' screen".
            r"\b\d+(?:\.\d+)?\s?% of (?:all |the )?(?:[\w-]+ ){0,2}[\w-]+s\b[^.?!]{0,20}?"
            r"\b(?:fail\w*|error\w*|end(?:s|ing)? (?:on|in|with)|time[sd]? out|timing out|"
            r"bounc\w*|see(?:s|ing)? (?:an? )?(?:error|blank|spinner))",
            r"\b(?:every|all|each) [\w-]+ (?:requests?|calls?|sends?|logins?|uploads?|images?) "
            r"(?:fail|fails|failing|errors?|times out)\b",
        ),
        # People of any kind telling us ("drivers report ..."), not logs or graphs saying so.
        *_cues(
            3.5,
            r"\b(?!(?:logs|metrics|graphs|dashboards|traces|alerts|docs|tests|checks|probes|"
            r"pods|nodes|hosts|jobs|workers|things|ones)\b)[a-z]{3,}s (?:report|say|are saying|"
            r"are reporting|complain|tell us)\b",
        ),
        # Someone outside the team noticing and being unable to do their job: "Marketing noticed:
        # the dashboard hasn't moved ..., so they can't tell whether to extend the sale".
        *_cues(
            3.5,
            r"^[A-Z]?[a-z]+(?: [a-z]+)? (?:noticed|reported|says|say|flagged|told us)\b"
            r"[^.?!]*\b(?:they|their)\b[^.?!]*\b(?:can'?t|cannot|couldn'?t|unable|not able)\b",
        ),
    ),
    Category.FINDING: (
        # Numbers and units as evidence: a named system and a measurement of it.
        *_cues(
            1.5,
            rf"{_NAME}\b[^.?!。]{{0,40}}?\b\d[\d,.]*\s?(?:%|ms|s|gb|mb|tb|g|k|qps|rps|/s)(?![\w-])",
            r"\bin the (?:last|past) \d+ ?(?:s|sec|seconds|min|mins|minutes|h|hours?)\b",
            # The same with the measurement first or in a terse unit: "31T cluster wide, 6.2T on
            # b-4", "clocks are 2m41s to 2m58s behind", "full gcs of 1.8-2.9s every 50-70s".
            r"(?<![\w.])~?\d[\d,.]*(?:-\d[\d,.]*)?(?:m\d+s|\s?(?:%|ms|s|m|h|d|t|tb|gb|mb|x))"
            rf"(?:/(?:s|h|min|day))?(?![\w-])[^.?!。]{{0,40}}?{_NAME}\b",
            rf"{_NAME}\b[^.?!。]{{0,40}}?(?<![\w.])~?\d[\d,.]*(?:-\d[\d,.]*)?"
            r"(?:m\d+s|\s?(?:m|h|d|t|x))(?:/(?:s|h|min|day))?(?![\w-])",
            r"\b(?:is|are) (?:\w+ly )?(?:rebalanc|restart|crash|retry|flapp|fail)\w*\b",
        ),
        # A record of what happened: "the job history shows it ran twice".
        *_cues(
            3.5,
            r"\b(?:history|audit ?log|event log|logs?|timeline|records?|traces?)\s+"
            r"(?:shows?|showed|says|said)\b",
        ),
        # A past change at a clock time is a fact about the change: "geo-svc was redeployed at
        # 10:35" (someone doing it now is an action).
        *_cues(
            3.5,
            r"\b(?:was|were|got)\s+(?:re)?[a-z]+(?:ed|en)\s+(?:at|around|about)\s+\d{1,2}:\d{2}\b",
        ),
        # What a release carried: "base image bump + jvm opts changed in the same release".
        *_cues(
            3.5,
            r"\b(?:changed|bumped|updated|removed|added|dropped|switched|raised|lowered|flipped)\b "
            r"(?:in|with|by) (?:the |that |this |our )?(?:same |last |latest |new )?"
            r"(?:release|deploy\w*|change|pr|commit|rollout|upgrade|build)\b",
        ),
        # A timing that matches: "lines up w the 09:04 deploy", "coincides with the failover".
        *_cues(
            3.5,
            r"\b(?:lines? up|lined up|coincides?|coincided|correlates?|matches|matched) "
            r"(?:w|with)\b(?![^.?!]*\?)",
        ),
        # A setting and its value: "gateway read timeout on /search is 2s".
        *_cues(
            2.0,
            r"\b(?:timeout|limit|ttl|retention|max(?:imum)?(?:[_.]\w+)*|min(?:imum)?(?:[_.]\w+)*|"
            r"threshold|interval|default|"
            r"pool size|batch size)\b[^.?!]{0,30}?\b(?:is|was|=|set to)\s*~?\d",
        ),
    ),
}


UNIT_MEASURE = re.compile(
    r"\b\d[\d,.]*\s?(?:%|ms|s|k|gb|mb|tb|qps|rps|/s)(?![\w-])|\b\d[\d,.]*k?\s?[a-z]+/s\b",
    re.IGNORECASE,
)
"""A value with its unit ("7s", "9.1k fixes/s", "31%"): the mark of a measurement."""

VALUE_CHANGE = re.compile(
    r"(?P<before>\d+(?:\.\d+)?)\s?(?P<unit>%|ms|s|k|m|g|gb|mb)?\s*(?:->|→|=>|to)\s*"
    r"(?:~|about |under |below )?(?P<after>\d+(?:\.\d+)?)\s?(?P<unit2>%|ms|s|k|m|g|gb|mb)?"
    r"(?![\w.])",
    re.IGNORECASE,
)
"""A value and what it became: "38% -> 0.2%", "from 900ms to 120ms"."""

BAD_METRIC = re.compile(
    rf"\b{_BAD_METRIC}\b|\b(?:fail\w*|errors?|rejects?|rejections|drops|retries)\b",
    re.IGNORECASE,
)
"""A metric where less is better."""

CATEGORY_CUES = {
    category: (*cues, *STRUCTURAL_CUES.get(category, ()))
    for category, cues in CATEGORY_CUES.items()
}


POPULATION = re.compile(
    rf"\b{_POPULATION}\b|\b(?:orders?|checkouts?|signups?|logins?|payments?|revenue|"
    r"tickets?|chats?|complaints?)\b",
    re.IGNORECASE,
)
"""People and business objects: what makes an impact statement concrete."""

CATEGORY_PRIORITY: tuple[Category, ...] = (
    Category.ROOT_CAUSE,
    Category.DECISION,
    Category.RECOVERY,
    Category.MITIGATION,
    Category.NEXT_STEP,
    Category.IMPACT,
    Category.FINDING,
)
"""Tie-breaker: the rarer, more conclusive kind of statement wins an equal score."""


def _any(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


REPORTS = _any(
    r"\b(?:tickets?|chats?|complaints?|complain\w*|calls?|emails?|support|reports? from|"
    r"report(?:ing|s)? (?:that )?(?:they|their))\b",
    r"\b(?:saying|say|says|telling us)\b (?:that )?(?:they|their|she|her|he|his)\b",
)
"""Impact seen through people telling us: support tickets, chats, complaints."""

BUSINESS_METRIC = _any(
    r"\b(?:orders?|checkouts?|signups?|sign-ups?|logins?|payments?|bookings?|purchases?|"
    r"conversions?)/(?:min|minute|s|sec|h|hour|day)\b",
    r"\b(?:revenue|sales|conversions?|gmv|bookings)\b",
    r"[€$£]\s?~?\d",
)
"""Impact seen in business numbers: orders per minute, revenue."""

ACK_WORDS = _words(
    """
    interesting hmm oh ah phew yikes
    ack acked ack'd acknowledged +1 on it looking checking into thanks thank you thx ty ok
    okay k kk sure sounds good got roger noted nice great cool awesome lgtm will do same
    here agreed yes yep no nope done joining omw brb back perfect fair makes sense classic
    ugh ouch wow indeed correct right me too side my all folks team everyone guys now
    """
)
"""Words an acknowledgement is made of; a short message of only these is an acknowledgement."""

BOT_NOTIFICATION = _any(
    r"^\s*\[(?:firing|resolved|alert|alarm|ok|warning|warn|critical|crit|info|triggered|"
    r"recovered)(?::\d+)?\]",
    r"^\s*(?:alert|alarm|deploy(?:ment)?|build|pipeline)\s*(?:#\d+\s*)?"
    r"(?:firing|resolved|triggered|started|finished|succeeded|failed|created)\b",
    # "Incident #42 resolved" is a bot; "incident resolved, thanks all" is the commander.
    r"^\s*incident\s*#\d+\s*(?:firing|resolved|triggered|created)\b",
    r"\b(?:severity|runbook|priority|dashboard|pipeline)\s*:\s*\S+\s*\|",
    r"^\s*(?:feature flag|flag) changed\b",
    r"\bthis is an automated message\b",
    # Integrations that post as users: a bracketed source tag before a machine identifier
    # ("[Tracker] INC-4410 updated", "[Pager] Incident #88213 triggered").
    r"^\s*\[[^\]\n]{2,30}\]\s*[^\n]*?(?:#\d+|\b[A-Z][A-Z0-9]+-\d+\b)",
    # A numbered run of a pipeline and its outcome: "Deploy #7731 infra-iam to production:
    # succeeded".
    r"^\s*(?:deploy(?:ment)?|build|pipeline|job|run|release)\s*#\d+\b[^\n]*?:\s*"
    r"(?:succeeded|failed|started|finished|passed|cancell?ed|queued)\b",
    # A generated report or snapshot headed by its kind: "Nightly backup report: ...".
    r"^\s*(?:[\w-]+\s+){0,3}(?:report|summary|digest|snapshot shared)\s*:",
    # Machine-formatted readings: fields separated by middle dots on more than one line, the way
    # dashboard integrations lay out a snapshot ("p50 41ms · p95 640ms" over "5xx 5.8% · rps
    # 3.1k"). One line with dots is a person's ("rolled back to v41 · errors 0.2%", "王·小明").
    r"\A(?=(?:[^\u00b7]*\u00b7){3})[^\u00b7]*\u00b7[^\n]*\n[\s\S]*\u00b7",
    # A component's state changed by a status sync: "Component 'X' changed from A to B".
    r"\bcomponent\s+['\"\u2018\u201c][^'\"\u2019\u201d]+['\"\u2019\u201d]\s+changed from\b",
)

SOCIAL = _any(
    r"^(?:hi|hey|hello|morning|evening)\b(?: (?:all|everyone|folks|team|there|guys))?\W*$",
    r"^(?:hi|hey|hello) (?:all|everyone|folks|team|there|guys)\b",
    r"\b(?:lol|lmao|haha\w*|hehe|rofl|xd)\b",
    r"\b(?:coffee|lunch|dinner|breakfast|snack|pizza|beer|tea|water|nap|birthday|laptop|"
    r"battery|charger)\b",
    r"\bgood (?:night|morning|evening|luck)\b|\bhave a good\b|\bnice work\b|\bgreat (?:job|work)\b",
    r"\bthank(?:s| you)\b[^.?!]*\b(?:all|everyone|team|folks|guys)\b",
    r"\bgo get some\b|\bof course it'?s\b",
    r"\bsorry\b|\bmy (?:internet|connection|wifi|mic|audio)\b|\bon mute\b|\bcan you hear\b",
)

SCHEDULING = _any(
    r"\b(?:meeting|invite|calendar|standup|stand-up|retro(?:spective)?|sync(?: up)?|huddle)\b",
    r"\bpostmortem (?:on|at|doc|meeting|is|will)\b|\bpost-mortem (?:on|at|doc)\b",
    r"(?<!last )(?<!since )\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b(?!'s)",
    r"\b\d{1,2}(?::\d\d)?\s?(?:am|pm)\b",
    r"\bworks for me\b|\bremind(?:er)?\b|\bin (?:10|15|20|30) ?(?:min|minutes)?\?",
)

COORDINATION = _any(
    r"\b(?:paging|pinging|looping|pulling) (?:\w+ )?in\b|\bpaging\b|\bping(?:ed)? \w+\b",
    r"\bjoin(?:ing|ed)? (?:the )?(?:bridge|call|channel|zoom|meet)\b|\bon the bridge\b",
    r"\bbridge is up\b|\bjust saw the page\b|\bjoining\b",
    r"\bwho (?:owns|has access|is on|knows)\b|\banyone (?:know|else|on|have)\b",
    r"\bcan (?:you|someone|somebody) (?:look|check|take a look)\b",
    r"\bgive me \d+ ?(?:min|minutes|sec)\b|\bget on the vpn\b",
    r"\b(?:i'?ll|i will|let me) (?:keep an eye|watch|monitor)\b|\bwatching\b|\bkeep watching\b",
    r"\blet'?s (?:keep watching|hold here|wait|monitor|watch)\b",
    r"\b(?:bridge|zoom|war ?room|huddle)\b",
    # Progress pings: the work is under way, its result is the fact.
    r"^(?:(?:i'?m|we'?re|still|now|also|just)\s+)?(?:grepping|digging|looking|checking|"
    r"investigating|searching|reading|going through|trying|working on)\b",
    r"\bdigging (?:into|in)\b|\bwill post (?:when|once|as soon)\b",
    # Alert hygiene and pointers at a paste ("^ graph of the last hour") are not facts.
    r"\b(?:silenc|mut|snooz|unsilenc|unmut)(?:ed|ing)\b[^.?!]*\balerts?\b",
    r"^\^",
)

COMMS = _any(
    # Our own status page; a vendor's status page that "says" something is a finding.
    r"\bstatus ?page\b(?!\s+(?:says|said|shows|showed|reports|reported|mentions|lists|"
    r"confirms|confirmed))",
    r"\b(?:exec|executive|leadership|stakeholder)s?\b[^.?!]*\b(?:update|comms|email|post)\w*",
    r"\bno eta\b",
    r"\bstatus ?page (?:updated|note)\b|\b(?:support )?macro\b",
    r"\blet (?:the )?[\w -]+ (?:team )?know\b|"
    r"\btell (?:the )?(?:customers|users|finance|support|agents|execs)\b",
    r"\bpoint support to\b|\bdo we need to tell\b",
)

HEDGE = _any(
    r"\b(?:would|could|might|maybe|perhaps|possibly)\b",
    r"\bonce (?:the|it|we|that|this|everything)\b",
    r"\bwe'd\b|\boptions:|\boptions\b|\btwo ways\b",
    r"\bif we\b",
    # Alternatives laid side by side: "we can roll back, or skip the step and backfill".
    r"\b(?:we|i) can\b[^.?!]*\bor\b",
    r"^(?:we|i) can\b|\b(?:the|an?) alternative\b",
)
"""Deliberation: an action that is only being considered has not happened."""

ALTERNATIVES = _any(
    # Two courses of action side by side: "pinning the image back or moving the consumers".
    r"^[a-z]+ing\b[^.?!]*\bor\s+[a-z]+ing\b",
)
"""Options laid out for a choice: like a question, they are no fact until one is taken."""

NEGATION = re.compile(
    r"(?:\b(?:not|never|no|nothing|nobody|without|tried|attempted)|n't)[\s-]+(?:\w+\s+)?$",
    re.IGNORECASE,
)
"""A negation just before a cue ("never rolled back", "no restart needed", "isn't draining").

Matched against the text in front of the cue, so it looks at most one word back."""

SPECULATION = _any(
    r"^(?:so\s+)?(?:if|unless|once|assuming|suppose|in theory)\b",
    r"\b(?:you'?d|i'?d|would|might|may) expect\b",
    r"(?:\b(?:will|would|could|might|may)|'d|'ll)\s+(?:\w+\s+)?(?:fail|break|lose|see|get|be|hit|"
    r"affect|go through|recover)\b",
)
"""A hypothesis or a prediction: it has not been observed, so it is no fact yet."""

PENDING = _any(r"\b(?:until|unless|once|if|whether)\b")
"""A recovery named in a condition ("hold off until the errors are gone") has not happened."""

PARTIAL = _any(r"\bonly\b", r"\bstill\b[^.?!]*\b(?:fail\w*|error\w*|broken|talking to|hitting)")
"""Partial recovery is a finding about what is still wrong, not a recovery."""

FRONTED_REASON = re.compile(r"^(?:because|due to|as a result of)\b[^.?!]{10,}?,", re.IGNORECASE)
"""A sentence that opens with its reason explains a state; it does not report an action."""

APPROVAL = re.compile(
    r"^(?:do it|go|go ahead|go for it|ship it|approved|yes do it|please do|sounds good,? go|"
    r"ok,? go|ok do it|yes,? go ahead)[.!]*$",
    re.IGNORECASE,
)
"""A bare go-ahead: it turns the proposal it answers into a decision."""

PROPOSAL = _any(
    r"^(?:i|we) can\b",
    # A recommendation: "the quickest safe path is to cancel that query".
    r"\b(?:path|option|way|approach|bet|move|fix) (?:here |forward )?is to\b",
    r"\bi (?:suggest|recommend)\b",
    r"\bwant me to\b|\bshall i\b|\bshould i\b|\bi could\b|\bwe could\b|\bi propose\b",
    r"\bproposal\b",
)
"""An offer of an action, which becomes a decision only when someone approves it."""

REQUEST = _any(r"\b(?:please|pls|plz)\b")
"""Asking for something: an action asked for is not yet an action done."""

LEADING_ASIDE = re.compile(
    r"^(?:while (?:that|this|it|we|i)\b[^:]{0,40}|meanwhile|in the meantime|fwiw|fyi|also)"
    r"\s*[:,]\s+",
    re.IGNORECASE,
)
"""A clause that only places the sentence in time: "while that rolls: bumped the timeout"
reports the action that follows it, and the action cues read from the start of a sentence."""

BARE_OPENER = re.compile(r"^(?:ok(?:ay)?|fine|agreed|alright)[.!]*$", re.IGNORECASE)
"""A lone go-ahead word that opens a message; what follows it is what was settled."""

ACKNOWLEDGED_ROLE = re.compile(
    r"^(?:ok(?:ay)?[,.!]?\s+)?(?:i'm on|i am on|on it|here|i'm here|online|ack(?:ed)?|joined)"
    r"(?:\s+call)?[,.;!]*\s+(?:(?:and|so)\s+)?(?:i'll|i will|i'm|i am|i've got|i got)\s+"
    r"(?:(?:take|be|taking|grab|have)\s+)?(?:the\s+)?(?:ic|incident command(?:er)?)"
    r"(?:\s+(?:on|for)\s+(?:this|it)(?:\s+one)?)?[.!]*$",
    re.IGNORECASE,
)
"""Answering the page and taking the role, and nothing else: "ok I'm on. I'll take IC" says the
author is there. Nobody is given anything to do and no course is chosen, so it is an
acknowledgement; the roles are set by the roster or the assignments that follow."""

BACK_REFERENCE = re.compile(
    r"^(?:(?:yep|yes|yeah|yup|right|exactly|true|agreed|indeed|ok(?:ay)?|ah+|oh|so)\b"
    r"[\s,.!-]*)*(?:that|this|which)(?:'s| is| was| would be)?\s+"
    r"(?:why|explains|would explain)\b",
    re.IGNORECASE,
)
"""A message that opens by pointing back: "yep, that's why we see errors in the US too". Its
subject is someone else's message, so it states no cause or course of its own: it agrees (the
same words after an explanation in the same message do explain, and are read as such)."""

_ROLE_LINE = r"^[ \t]*(?:[-*\u2022][ \t]*)?"
ROSTER_COMMAND = re.compile(
    _ROLE_LINE + r"(?:ic|incident commander|incident lead)[ \t]*[:\uff1a][ \t]*@\S",
    re.IGNORECASE | re.MULTILINE,
)
ROSTER_ROLE = re.compile(_ROLE_LINE + r"[^\W\d][^\n:\uff1a@]{0,40}[:\uff1a][ \t]*@\S", re.MULTILINE)
MIN_ROSTER_ROLES = 3
"""A roster post: one line per role, each naming its person ("IC: @Ana", "Comms: @Ruth", ...),
the incident commander among them. The team is set, which is a decision; one role line alone
("IC: @Ana") is a label, not yet a roster. Read on the text before mentions are dropped."""


ASK = re.compile(
    r"^(?:[a-z]+,?\s+)?(?:can|could|would|will) (?:you|someone|somebody|anyone|one of you)\b",
    re.IGNORECASE,
)
"""A question without its question mark: "lena can you write up the cause" asks, it states
nothing, whatever words it uses."""

INTENT = re.compile(
    r"^(?:(?:ok(?:ay)?|so|and|then|now)[,.]?\s+)?(?:i'?ll|i will|we'?ll|we will|let me|"
    r"i'?m going to|we'?re going to|going to|i'?m about to|about to)\s+(?:\w+\s+)?"
    rf"(?:{_ACTION_BASE})\b",
    re.IGNORECASE,
)
"""An announced action: it is a fact once done (or once someone approves it)."""

OWNERSHIP_CLAIM = _any(
    r"^(?:i'?ll|i will|i can) (?:take|own|do|handle|grab) (?:the |that |this |it\b|#?\d|\w+ one)",
    r"\b(?:is|are) mine\b|^mine\b",
    r"^(?:i'?ll|i will) take \w+",
)
"""Someone claiming an item of a list just posted: it belongs to that list's entry."""

STATUS_WORDS = _words(
    """
    now still again far worst best peak flat steady current currently count total ish around
    about approx roughly yet already up down high low over under normal level levels value
    p50 p90 p95 p99 p999 latency error errors rate 5xx 4xx 500s cpu memory lag tho though btw
    fwiw
    """
)
"""Words of a running status reading ("p99 at 11s now", "5xx 18%, worst so far"): a message
made only of these and numbers repeats the state of a metric rather than adding a fact."""

RUNNING_STATUS = _any(r"\b(?:now|so far|still|already|currently|atm|at the moment|count|total)\b")
"""Marks an update of a value already being watched ("40 chats now", "ticket count 60")."""

TECHNICAL_TOKEN = re.compile(
    r"\b\d{1,2}:\d{2}(?::\d{2})?\b"
    r"|\b\d[\d,.]*\s?(?:%|ms|s|sec|min|k|m|x|/s|msg/s|rps|qps|gb|mb|gi|mi|ki)?(?![\w])"
    r"|#\d+"
    r"|\b[A-Za-z]+(?:[-_./][A-Za-z0-9]+)+\b"
    r"|(?-i:\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b[A-Z]{2,}\b)"
    r"|\b(?:cpu|memory|disk|io|queue|pool|connections?|replicas?|replication|primary|cluster|"
    r"nodes?|pods?|hosts?|volume|cache|dns|latency|throughput|api|db|database)\b",
    re.IGNORECASE,
)
"""Numbers, identifiers and infrastructure nouns: a dense sentence is usually an observation."""
