"""Links back to Lark and the Markdown postmortem document (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

from timeline_pipeline.curation.export import escape_markdown, render_markdown
from timeline_pipeline.curation.links import (
    LARK_APPLINK_BASE,
    evidence_link,
    message_applink,
    parse_message_source_key,
)
from timeline_pipeline.curation.timeline import EntryView, EvidenceLink, SummaryView, TimelineView

T = datetime(2026, 11, 29, 10, 2, tzinfo=UTC)


def test_a_lark_message_links_to_the_chat_at_that_message() -> None:
    url = evidence_link("lark", "lark_message", "chat/oc_abc/message/om_123")
    assert url is not None and url.startswith(LARK_APPLINK_BASE + "?")
    query = parse_qs(urlsplit(url).query)
    assert query == {"openChatId": ["oc_abc"], "openMessageId": ["om_123"]}
    assert url == message_applink("oc_abc", "om_123")


def test_only_lark_messages_get_links() -> None:
    assert evidence_link("jira", "issue", "chat/oc_abc/message/om_1") is None
    assert evidence_link("lark", "lark_message", "chat/oc_abc/window/2026") is None
    assert parse_message_source_key("chat/oc_a/message/om_b/extra") is None
    assert parse_message_source_key("chat/oc a/message/om_b") is None


def entry(
    entry_id: int,
    title: str,
    *,
    category: str = "mitigation",
    status: str = "confirmed",
    links: tuple[EvidenceLink, ...] = (),
    **fields: object,
) -> EntryView:
    values: dict[str, object] = {
        "id": entry_id,
        "workspace_id": "inc-1",
        "occurred_at": T,
        "title": title,
        "detail": None,
        "category": category,
        "source": "ai",
        "status": status,
        "human_edited": False,
        "revision": 1,
        "etag": f'"e{entry_id}.r1"',
        "evidence": links,
        "created_at": T,
        "updated_at": T,
    }
    values.update(fields)
    return EntryView(**values)  # type: ignore[arg-type]


def test_text_from_chat_cannot_break_the_table_or_inject_markup() -> None:
    assert escape_markdown("a | b") == "a \\| b"
    assert escape_markdown("<script>x</script>") == "&lt;script\\>x&lt;/script\\>"
    assert escape_markdown("[click](http://evil)") == "\\[click\\](http://evil)"
    assert escape_markdown("SEV-2 *now* ~~x~~") == "SEV-2 \\*now\\* \\~\\~x\\~\\~"
    assert escape_markdown("two\nlines") == "two<br>lines"


def test_the_postmortem_lists_entries_in_order_with_categories_links_and_the_summary() -> None:
    link = EvidenceLink(7, T, message_applink("oc_abc", "om_7"))
    recalled = EvidenceLink(8, T, None)
    view = TimelineView(
        workspace_id="inc-1",
        statuses=("draft", "confirmed"),
        entries=[
            entry(1, "Checkout latency above 2s for EU", category="impact", links=(link,)),
            entry(2, "Rolled back | v41", status="draft", links=(link, recalled), detail="why"),
            entry(3, "Pool sized up", category="root_cause", source="human"),
        ],
        summary=SummaryView("inc-1", "EU checkout was slow.\nRolled back.", "human", 2, "", T),
        title="Checkout outage",
    )
    document = render_markdown(view, generated_at=T)
    lines = document.splitlines()
    assert lines[0] == "# Incident timeline: Checkout outage"
    summary_at = lines.index("## Summary")
    timeline_at = lines.index("## Timeline")
    assert summary_at < timeline_at
    assert "EU checkout was slow." in lines[summary_at + 2]
    assert "_Summary written by a curator, revision 2._" in document
    rows = [line for line in lines if line.startswith("| 2026")]
    assert rows == [
        "| 2026-11-29 10:02 | Impact | **Checkout latency above 2s for EU** | confirmed | "
        "[#7](https://applink.larksuite.com/client/chat/open?openChatId=oc_abc&openMessageId=om_7)"
        " |",
        "| 2026-11-29 10:02 | Mitigation | **Rolled back \\| v41**<br>why | draft | "
        "[#7](https://applink.larksuite.com/client/chat/open?openChatId=oc_abc&openMessageId=om_7)"
        " #8 |",
        "| 2026-11-29 10:02 | Root cause | **Pool sized up** | confirmed, added by curator | - |",
    ]


def test_an_empty_timeline_says_so() -> None:
    view = TimelineView("inc-1", ("confirmed",), [], None)
    document = render_markdown(view, generated_at=T)
    assert "_No summary yet._" in document and "_No entries._" in document
