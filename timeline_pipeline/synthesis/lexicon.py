"""The incident-chat vocabulary the rule synthesizer scores sentences with.

Kept apart from the scoring code so that a reviewer can read (and argue with) the vocabulary in
one place. The cues are general English incident language (what on-call engineers write about
impact, findings, actions and recovery in any system), not phrases from a particular incident.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from timeline_pipeline.synthesis.models import Category

__all__ = [
    "ACK_WORDS",
    "APPROVAL",
    "BOT_NOTIFICATION",
    "CATEGORY_CUES",
    "CATEGORY_PRIORITY",
    "COMMS",
    "COORDINATION",
    "HEDGE",
    "OWNERSHIP_CLAIM",
    "PARTIAL",
    "PROPOSAL",
    "SCHEDULING",
    "SOCIAL",
    "TECHNICAL_TOKEN",
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
    r"incorrect|down|unavailable|unreachable|degraded)"
)
_POPULATION = (
    r"(?:customers?|users?|clients?|merchants?|shoppers?|buyers?|tenants?|people|accounts?|"
    r"everyone|everybody)"
)

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
            r"(?:normal|baseline|the [\w.%~ ]*baseline|[~<]?\d+(?:\.\d+)?\s?(?:%|ms\b|s\b|x\b))",
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
            r"(?:0|zero|empty)\b",
        ),
        *_cues(
            2.5,
            r"\b(?:errors?|error rate|5xx|4xx|latency|failures?|timeouts?|lag|backlog|queue|"
            r"ratio|rate)\b[^.?!]*\b(?:dropping|dropped|going down|decreasing|falling)\b",
            r"\b(?:improving|recovering|subsiding|stabili[sz]ing)\b",
            r"\bsuccessfully\b|\bsucceed(?:ed|s)\b",
            r"\bsuccess rate\b[^.]*\b(?:up to|back|at) \d",
            r"^verified\b|\b(?:i|we|have|has|just) verified\b|\bverified (?:that|it|again)\b",
            r"\bconfirmed (?:fixed|working|good|healthy)\b",
        ),
    ),
    Category.MITIGATION: (
        *_cues(
            3.0,
            r"\broll(?:ed|ing)?[\s-]?back\b|\brollback\b|\broll(?:ed|ing)? (?:[\w.-]+ ){1,3}back\b",
            r"\brevert(?:ed|ing)?\b",
            r"\brestart(?:ed|ing)?\b|\breboot(?:ed|ing)?\b|\bbounc(?:ed|ing)\b|\brecycl(?:ed|ing)\b",
            r"\bfail(?:ed|ing)?[\s-]?over\b|\bfailover\b|\bswitchover\b",
            r"\bpromot(?:ed|ing)\b",
            r"\bscal(?:ed|ing)\b",
            r"\badd(?:ed|ing) (?:more |an? |the )?(?:capacity|nodes?|replicas?|index|rule|limit|"
            r"retry|retries|timeout|cache)",
            r"\bdrain(?:ed|ing)\b|\bcordon(?:ed|ing)\b",
            r"\b(?:disabl|enabl)(?:ed|ing)\b|\bturn(?:ed|ing)? (?:off|on)\b",
            r"\bswitch(?:ed|ing)? (?:\w+ )?(?:to|back|over|off)\b|\bis back on\b",
            r"\bflag [\w.-]+ (?:set|flipped|changed)\b|\bset to [\w.-]+\b",
            r"\bblock(?:ed|ing)\b|\bban(?:ned|ning)\b",
            r"\bpurg(?:ed|ing)\b|\bflush(?:ed|ing)\b|\bclear(?:ed|ing)\b|\bdelet(?:ed|ing)\b",
            r"\b(?:carts?|jobs?|sessions?|keys?|caches?|records?) reset\b|\breset (?:the )?\d",
            r"\bhot-?fix\b|\bpatch(?:ed|ing)\b|\bdeploy(?:ed|ing) (?:the |a )?fix\b",
            r"\bappl(?:ied|ying)\b",
            r"\brunning [\w./-]+\.(?:py|sh|sql)\b|\bdry[- ]run\b",
            r"\b(?:ran|running) (?:the |a )?[\w -]*(?:script|job|migration)",
            r"\b(?:raised|increased|bumped|doubled) (?:our |the )?[\w -]*"
            r"(?:limit|capacity|pool|quota)",
            r"\bkill(?:ed|ing)\b|\bpaus(?:ed|ing)\b|\brate[- ]limit(?:ed|ing)\b",
            r"\bthrottl(?:ed|ing) (?:the |our )?(?:traffic|jobs|clients)",
            r"\bopened (?:a|an) (?:ticket|case|support request)\b|\bescalat(?:ed|ing) to\b",
            r"\brerout(?:ed|ing)\b|\bredirect(?:ed|ing)\b|\bshift(?:ed|ing) traffic\b",
            r"\b(?:traffic|requests|load|users) (?:is |are |was |were )?(?:shifted|moved|drained|"
            r"routed|sent|pinned)\b",
            r"\b(?:renew|reload|rotat|re-?issu|replac|resiz|upgrad|downgrad|evacuat|quarantin|"
            r"isolat|re-?index|re-?queu|backfill|reprocess)(?:ed|ing)\b",
            r"\brebuil(?:d|t|ding)\b|\bre-?provision",
            r"\brollout (?:done|complete|finished)\b|\bpods? restarted\b",
            r"\bpurge\b|\bdisable\b|\brestart\b|\bblock\b",
        ),
        *_cues(
            1.5,
            r"^(?:(?:i'?m|we'?re|i|we|now|just|i'?ll|i will|we'?ll|we will|will|going to|about to|"
            r"let me) )?"
            r"(?:roll|revert|restart|reboot|fail(?:ed|ing)? ?over|promot|scal|drain|disabl|enabl|"
            r"turn|switch|flipp|block|purg|flush|clear|reset|patch|deploy|appl|running|ran|rais|"
            r"increas|kill|paus|rerout|redirect|shift|rebuil|open)\w*\b",
        ),
        *_cues(
            1.0,
            r"\b(?:done|complete(?:d)?|finished|started|in progress|kicked off|now)\b",
            r"\bat \d{1,3}%$",
        ),
    ),
    Category.DECISION: (
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
        ),
        *_cues(
            3.0,
            r"\blet'?s (?:go with|proceed|switch|roll|fail|move|keep|revert|disable|enable|block|"
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
            r"\b(?:fail\w*|error\w*)\b[^.?!]*\b\d+(?:\.\d+)?\s?% of\b",
        ),
        *_cues(
            3.5,
            r"\b(?:tickets?|complaints?|chats?|calls?|reports?) (?:from|about)\b|\bflood of\b",
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
        *_cues(-5.0, r"\bno (?:customer |user |external )?impact\b"),
    ),
    Category.FINDING: (
        *_cues(
            2.0,
            r"\blooks? like\b|\bseems?\b|\bappears? to\b|\bturns? out\b|\bfound\b",
            r"\bnoticed?\b|\bidentified\b|\bconfirmed that\b|\bmatches\b",
            r"\b(?:logs?|stack ?traces?|traces|metrics|graphs?|dashboards?|profiles?) (?:show|say)",
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
            r"\b(?:is|are) (?:healthy|unhealthy|fine|ok)\b",
            r"\b(?:comes?|came) from\b|\bis from (?:pr|commit|change)\b|\b(?:pr|commit) #?\d+",
            r"\bsame (?:error|stack|symptom)|\bdifferent error\b",
            r"\b(?:checked|inspected|profiled|traced|reproduced|bisected)\b",
            r"\b(?:seeing|we see|i see|observing|observed)\b",
            r"\bstarted (?:around|about|right after|after|at|when)\b",
            r"\b(?:expired|jumped|spiked|climbing|rising|elevated|unreachable|refused|resets?|"
            r"crash\w*|evicted|oom\w*|stuck|hung|flapping|saturat\w*)\b",
            r"\bfrom [~]?\d[\w.%]* to [~]?\d[\w.%]*",
            r"\binstead of\b|\bsupposed to\b|\bmismatch|\bmisconfigur\w*|\bwrong\b",
            r"\b(?:is|are|was|were|got|went) full\b|\b(?:disk|volume|queue|pool) full\b",
        ),
        *_cues(1.0, r"\b(?:failing|erroring|broken|intermittent\w*|flaky)\b"),
    ),
    Category.NEXT_STEP: (
        *_cues(
            3.5,
            r"\bfollow[\s-]?ups?\b|\baction items?\b|\bnext steps?\b|\bto-?dos?\b",
            r"\bonce\b[^.]*\b(?:sorted|fixed|done|stable|resolved|over|recovered|back)\b",
            r"\bwe (?:need|should|must|have) to\b|\bwe should\b|\bneeds? to be (?:fixed|added)\b",
            r"\bblocked on\b|\bblocker\b",
            r"\b(?:file|open|create) (?:a |an )?(?:ticket|jira|issue) (?:for|to)\b",
        ),
    ),
}

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


ACK_WORDS = _words(
    """
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
    r"^\s*(?:alert|alarm|incident|deploy(?:ment)?|build|pipeline)\s*(?:#\d+\s*)?"
    r"(?:firing|resolved|triggered|started|finished|succeeded|failed|created)\b",
    r"\b(?:severity|runbook|priority|dashboard|pipeline)\s*:\s*\S+\s*\|",
    r"^\s*(?:feature flag|flag) changed\b",
    r"\bthis is an automated message\b",
)

SOCIAL = _any(
    r"\b(?:lol|lmao|haha\w*|hehe|rofl|xd)\b",
    r"\b(?:coffee|lunch|dinner|breakfast|snack|pizza|beer|tea|water|sleep|nap|birthday|laptop|"
    r"battery|charger)\b",
    r"\bgood (?:night|morning|evening|luck)\b|\bhave a good\b|\bnice work\b|\bgreat (?:job|work)\b",
    r"\bthank(?:s| you)\b[^.?!]*\b(?:all|everyone|team|folks|guys)\b",
    r"\bgo get some\b|\bof course it'?s\b",
    r"\bsorry\b|\bmy (?:internet|connection|wifi|mic|audio)\b|\bon mute\b|\bcan you hear\b",
)

SCHEDULING = _any(
    r"\b(?:meeting|invite|calendar|standup|stand-up|retro(?:spective)?|sync(?: up)?|huddle)\b",
    r"\bpostmortem (?:on|at|doc|meeting|is|will)\b|\bpost-mortem (?:on|at|doc)\b",
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b",
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
)

COMMS = _any(
    r"\bstatus ?page (?:is |was )?(?:up|updated|set|on|note)\b|\b(?:update|post|set|draft)\w* "
    r"(?:on |to )?(?:the )?status ?page\b",
    r"\bstatus ?page (?:updated|note)\b|\b(?:support )?macro\b",
    r"\blet (?:the )?[\w -]+ (?:team )?know\b|\btell (?:customers|users|finance|support)\b",
    r"\bpoint support to\b|\bdo we need to tell\b",
)

HEDGE = _any(
    r"\b(?:would|could|might|maybe|perhaps|possibly)\b",
    r"\bonce (?:the|it|we|that|this|everything)\b",
    r"\bwe'd\b|\boptions?:",
    r"\bif we\b",
)
"""Deliberation: an action that is only being considered has not happened."""

PARTIAL = _any(r"\bonly\b", r"\bstill\b[^.?!]*\b(?:fail\w*|error\w*|broken|talking to|hitting)")
"""Partial recovery is a finding about what is still wrong, not a recovery."""

APPROVAL = re.compile(
    r"^(?:do it|go|go ahead|go for it|ship it|approved|yes do it|please do|sounds good,? go|"
    r"ok,? go|ok do it|yes,? go ahead)[.!]*$",
    re.IGNORECASE,
)
"""A bare go-ahead: it turns the proposal it answers into a decision."""

PROPOSAL = _any(
    r"^(?:i|we) can\b",
    r"\bwant me to\b|\bshall i\b|\bshould i\b|\bi could\b|\bwe could\b|\bi propose\b",
    r"\bproposal\b",
)
"""An offer of an action, which becomes a decision only when someone approves it."""

OWNERSHIP_CLAIM = _any(
    r"^(?:i'?ll|i will|i can) (?:take|own|do|handle|grab) (?:the |that |this |it\b|#?\d|\w+ one)",
    r"\b(?:is|are) mine\b|^mine\b",
    r"^(?:i'?ll|i will) take \w+",
)
"""Someone claiming an item of a list just posted: it belongs to that list's entry."""

TECHNICAL_TOKEN = re.compile(
    r"\b\d{1,2}:\d{2}(?::\d{2})?\b"
    r"|\b\d[\d,.]*\s?(?:%|ms|s|sec|min|k|m|x|/s|msg/s|rps|qps|gb|mb)?(?![\w])"
    r"|#\d+"
    r"|\b[A-Za-z]+(?:[-_./][A-Za-z0-9]+)+\b"
    r"|(?-i:\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b[A-Z]{2,}\b)"
    r"|\b(?:cpu|memory|disk|io|queue|pool|connections?|replicas?|replication|primary|cluster|"
    r"nodes?|pods?|hosts?|volume|cache|dns|latency|throughput|api|db|database)\b",
    re.IGNORECASE,
)
"""Numbers, identifiers and infrastructure nouns: a dense sentence is usually an observation."""
