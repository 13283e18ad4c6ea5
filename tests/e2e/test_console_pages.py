"""Issue 23: the console's pages at laptop width, in Chromium at 1400×1000, with a screenshot of each under
test-output/e2e/<test>/ (CI keeps them): index, sessions, a session with its turns, turns, gate decisions,
audits, an audit's diff, the session rollback's confirmation, the review queue, evaluation runs and the API
docs. Each asserts what must be visible: the message / fact / content columns inside the window and not
clipped, no horizontal scrolling, the rollback's diff, the docs' operation list; and a Chinese turn renders
glyphs (fonts-noto-cjk), not tofu."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import timezone

from dataset_app.collect import collect_samples
from dataset_app.models import DatasetSample, EvaluationRun
from sessions_app.models import ConversationSession, ConversationTurn, GateStatus, MemoryGateDecision
from tests.conftest import ApiClient
from tests.e2e.conftest import login
from tests.e2e.test_console_flow import LEARNING_TOKEN, SESSION, make_user, pipeline  # noqa: F401  (fixture)

WIDTH = 1400
LONG_SESSION = "channel:telegram:direct:peer-8812736451-with-a-long-account-name"
LONG_FACT = (
    "Prefers that weekly project summaries arrive on Friday afternoons as a short bulleted list, with the "
    "open questions first and the decisions taken that week after them, never as one long paragraph."
)
CHINESE = "我下周三要去杭州出差，请记住我对花生过敏，订餐时一定要避开含花生的菜。"

# Canvas pixels of one character drawn in the page's own font: without a CJK font every Chinese character is
# the same missing-glyph box (or nothing), so two different characters and a private-use one look alike.
GLYPHS_JS = """([selector, chars]) => {
  const font = getComputedStyle(document.querySelector(selector)).font;
  const draw = (ch) => {
    const canvas = document.createElement('canvas');
    canvas.width = 48; canvas.height = 48;
    const ctx = canvas.getContext('2d');
    ctx.font = font.replace(/\\d+(\\.\\d+)?px/, '32px');
    ctx.fillStyle = '#000';
    ctx.textBaseline = 'top';
    ctx.fillText(ch, 4, 4);
    return Array.from(ctx.getImageData(0, 0, 48, 48).data.filter((_, i) => i % 4 === 3)).join(',');
  };
  return chars.map(draw);
}"""

# The elements reaching past the window's right edge (innermost first), to name the culprit of a wide page.
OVERFLOWING_JS = """(width) => Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > width + 0.5 && e.children.length === 0)
  .slice(0, 8)
  .map(e => `${e.tagName.toLowerCase()}.${e.className} (${Math.round(e.getBoundingClientRect().right)} px)`)"""

# A table's right edge and the edge it must stay within: the filters' left edge, else its container's right.
TABLE_JS = """(cells) => {
  const table = document.querySelector(cells).closest('table');
  const filter = document.querySelector('#changelist-filter');
  const room = filter ? filter.getBoundingClientRect().left : table.parentElement.getBoundingClientRect().right;
  return {right: table.getBoundingClientRect().right, limit: room};
}"""
COLUMNS_JS = """() => Array.from(document.querySelectorAll('#result_list thead th, #changelist-filter, #content, #changelist, .results'))
  .map(e => `${e.className || e.id}: ${Math.round(e.getBoundingClientRect().width)}`)"""


def long_rows() -> dict[str, Any]:
    """A session with a long id, a long fact and a long Chinese message: what pushed columns off screen."""
    session = ConversationSession.objects.create(id=LONG_SESSION, channel_id="telegram")
    turn = ConversationTurn.objects.create(
        session=session,
        turn_number=1,
        user_message_content=CHINESE * 3,
        agent_message_content="好的，已记下。",
        gate_status=GateStatus.DONE,
    )
    decision = MemoryGateDecision.objects.create(
        turn=turn,
        session=session,
        decision="UPDATE_USER",
        reason="A stable preference about the user's weekly summaries.",
        candidate_fact=LONG_FACT,
        llm_model="fake-model-with-a-rather-long-name-1",
    )
    EvaluationRun.objects.create(
        llm_model="fake-model-1",
        prompt_version="gate-v3",
        status="completed",
        sample_count=4,
        correct_count=3,
        accuracy=0.75,
        finished_at=timezone.now(),
    )
    return {"turn": turn, "decision": decision}


def fits(page: Any, cells: str) -> None:
    """The page does not scroll sideways, and the first cells of ``cells`` lie inside the window, unclipped."""
    scroll = page.evaluate("document.documentElement.scrollWidth")
    assert scroll <= WIDTH, (
        f"the page is {scroll} px wide at {WIDTH} px: {page.evaluate(OVERFLOWING_JS, WIDTH)} {page.evaluate(COLUMNS_JS)}"
    )
    table = page.evaluate(TABLE_JS, cells)
    assert table["right"] <= table["limit"] + 0.5, (
        f"{cells}: the table passes its room: {table} {page.evaluate(COLUMNS_JS)}"
    )
    cell = page.locator(cells).first
    box = cell.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= WIDTH, (cells, box)
    clipped = cell.evaluate("e => e.scrollWidth > e.clientWidth + 1")
    assert not clipped, f"{cells} is clipped"


def test_the_console_pages_at_1400_px(page, shot, live_server, pipeline, settings):  # noqa: F811
    url, user_audit = live_server.url, pipeline["user_audit"]
    rows = long_rows()
    feedback = ApiClient(None)
    for turn_id in pipeline["turns"]:
        response = feedback.post(
            f"/api/v1/traces/{turn_id}/feedback",
            {"user_id": "ada", "feedback": "up"},
            HTTP_X_LEARNING_TOKEN=LEARNING_TOKEN,
        )
        assert response.status_code == 200, response.content
    settings.DATASET_NOT_ROLLED_BACK_WITHIN_DAYS = 0
    collect_samples()
    assert DatasetSample.objects.filter(annotation_status="needs_review").exists()
    make_user("olga", "operator")
    login(page, url, "olga", "olga-pass-123")
    assert page.viewport_size == {"width": WIDTH, "height": 1000}

    page.goto(f"{url}/admin/")
    assert page.locator("#content-main").is_visible()
    shot("index")

    page.goto(f"{url}/admin/sessions_app/conversationsession/")
    session_link = page.locator("#result_list").get_by_role("link", name=SESSION, exact=True)
    assert session_link.is_visible()
    assert session_link.evaluate("e => e.scrollWidth <= e.clientWidth"), "the session's id is cut"
    fits(page, "#result_list td.field-turn_count")
    shot("sessions")

    session_url = reverse("admin:sessions_app_conversationsession_change", args=[quote(SESSION)])
    page.goto(f"{url}{session_url}")
    turns = page.locator("#session-turns tr.turn-row")
    assert turns.count() == 3
    first = turns.first.inner_text()  # Newest first: the weather question decided nothing.
    assert "What is the weather today?" in first and "NO_WRITE" in first
    written = page.locator("#session-turns .turn-write").filter(has_text=user_audit.id)
    assert written.is_visible() and "written USER.md" in written.inner_text()
    fits(page, "#session-turns td.col-text")
    assert page.locator("#rollback-session-link").is_visible()
    shot("session detail with its turns")

    page.goto(f"{url}/admin/sessions_app/conversationturn/")
    message = page.locator("#result_list td.field-short_user_message").filter(has_text="我下周三")
    assert message.locator("span").get_attribute("title") == CHINESE * 3  # The whole text on hover.
    fits(page, "#result_list td.field-short_user_message")
    fits(page, "#result_list td.field-created_at")
    shot("turns")

    page.goto(f"{url}/admin/sessions_app/memorygatedecision/")
    fact = page.locator("#result_list td.field-short_fact").filter(has_text="Prefers that weekly")
    assert fact.locator("span").get_attribute("title") == LONG_FACT
    assert fact.is_visible()
    fits(page, "#result_list td.field-short_fact")
    fits(page, "#result_list td.field-tokens")  # The last column too.
    shot("gate decisions")

    page.goto(f"{url}/admin/guardian_app/writeguardianaudit/")
    ids = page.locator("#result_list th.field-id a")
    assert ids.first.get_attribute("title") in {user_audit.id, pipeline["tools_audit"].id}  # Truncated, whole on hover.
    fits(page, "#result_list td.field-fact_col")
    fits(page, "#result_list td.field-source")
    shot("audits")

    page.goto(f"{url}/admin/guardian_app/writeguardianaudit/{user_audit.id}/change/")
    added = page.locator(".gdiff span.add").filter(has_text="Prefers summaries on Fridays.")
    assert added.is_visible()
    shot("audit diff")

    page.goto(f"{url}{session_url}")
    page.click("#rollback-session-link")
    page.wait_for_url(re.compile(r".*/rollback/$"))
    assert "Dry run: 2 of 2 write(s) can be rolled back cleanly." in page.inner_text("#session-dry-run")
    user_diff = page.locator('.session-file-diff[data-file="USER.md"] .gdiff span.del')
    assert user_diff.filter(has_text="Prefers summaries on Fridays.").is_visible()
    assert page.locator('.session-file-diff[data-file="TOOLS.md"] .gdiff').is_visible()
    fits(page, "#session-rollback-items td.col-text")
    shot("session rollback confirmation")

    page.goto(f"{url}/admin/dataset_app/datasetsample/")
    content = page.locator("#result_list td.field-content_col")
    assert content.count() >= 2 and content.first.inner_text().strip() not in ("", "—")
    fits(page, "#result_list td.field-content_col")
    fits(page, "#result_list td.field-created_at")
    page.click("text=/Review queue \\(\\d+\\)/")
    page.wait_for_url(re.compile(r".*/review/[0-9A-Z]{26}/$"))
    assert page.locator("#ds-review").is_visible() and page.locator(".ds-head").first.is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    shot("review queue")

    page.goto(f"{url}/admin/dataset_app/evaluationrun/")
    assert "75.0%" in page.locator("#result_list").inner_text()
    fits(page, "#result_list td.field-status")
    shot("evaluation runs")

    page.goto(f"{url}/api/docs")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)
    operations = page.locator(".swagger-ui .opblock")
    assert operations.count() >= 20
    assert operations.first.is_visible()
    assert "/api/v1/turns" in page.locator(".swagger-ui").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    shot("api docs")
    assert rows["decision"].candidate_fact == LONG_FACT


def test_a_chinese_turn_renders_glyphs_not_tofu(page, shot, live_server, admin_user):
    """Half the corpus is Chinese: with no CJK font (apt fonts-noto-cjk) Chromium draws every character as the
    same missing-glyph box. Two different characters must differ from each other and from a private-use one."""
    rows = long_rows()
    login(page, live_server.url, "admin", "password")
    page.goto(f"{live_server.url}/admin/sessions_app/conversationturn/{rows['turn'].id}/change/")
    assert "我下周三要去杭州出差" in page.inner_text("#content")
    first, second, unassigned = page.evaluate(GLYPHS_JS, ["#content", ["记", "忆", "\ue000"]])
    distinct, not_missing, drawn = first != second, unassigned not in (first, second), set(first.split(",")) != {"0"}
    assert distinct, "two Chinese characters render alike: tofu (is fonts-noto-cjk installed?)"
    assert not_missing, "a Chinese character renders as the missing-glyph box"
    assert drawn, "a Chinese character renders as nothing"
    shot("chinese turn")
