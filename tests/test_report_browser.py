"""report.html in a real browser: headless Chromium renders a non-blank page with the attempts table and no live
script, and at the width of MLflow's artifact frame (1,336 px) the decision, per-configuration, plan and attempts
tables need no horizontal scrolling; at 600 px (the artifact pane on a laptop) the decision card and the first table
need none either, and at 1,440 x 900 the cost-against-volume figure is on the first screen (issue 30).

Needs Debian's `chromium` (/usr/bin/chromium); `make test` installs it. Without it this test fails, it never skips.
The screenshots are kept in test-artifacts/report/ (gitignored).
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

from gpucost_mlflow.report import render
from tests.browser import chromium, keep
from tests.synthetic_report import decided_report, synthetic_report

pytestmark = pytest.mark.integration  # headless Chromium

WIDTH, HEIGHT = 1336, 2000  # the artifact frame of MLflow's run page on a 1,920 px screen
FITTING = ("decision", "summary", "balance", "attempts", "attempt-checks")


class _Dom(HTMLParser):
    """Counts <script> elements and the body rows of table#attempts in a serialized DOM."""

    def __init__(self):
        super().__init__()
        self.scripts = 0
        self.attempts_tables = 0
        self.attempt_rows = 0
        self._table_depth = 0  # >0 while inside table#attempts (counting nested tables)
        self._in_tbody = False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.scripts += 1
        if tag == "table":
            if self._table_depth:
                self._table_depth += 1
            elif dict(attrs).get("id") == "attempts":
                self.attempts_tables += 1
                self._table_depth = 1
        elif self._table_depth == 1 and tag == "tbody":
            self._in_tbody = True
        elif self._table_depth == 1 and self._in_tbody and tag == "tr":
            self.attempt_rows += 1

    def handle_endtag(self, tag):
        if tag == "table" and self._table_depth:
            self._table_depth -= 1
        elif tag == "tbody" and self._table_depth == 1:
            self._in_tbody = False


@pytest.fixture(scope="module")
def report_html(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    page = render.page(synthetic_report())
    source = _Dom()
    source.feed(page)
    source.close()
    # Checked before any browser starts: a live alert() blocks headless Chromium until the 60 s timeout.
    assert source.scripts == 0, "render.page let the hostile variant name through as a <script> element"
    path.write_text(page, encoding="utf-8")
    return path


def test_chromium_renders_a_nonblank_page(report_html, tmp_path):
    import matplotlib.image

    shot = tmp_path / "report-1336.png"
    chromium(tmp_path, f"--screenshot={shot}", report_html.as_uri(), width=WIDTH, height=HEIGHT)
    assert shot.exists() and shot.stat().st_size > 0, "chromium wrote no screenshot"
    kept = keep(shot, "report")
    pixels = matplotlib.image.imread(str(shot))[..., :3]  # floats in [0, 1]
    assert pixels.shape[:2] == (HEIGHT, WIDTH), pixels.shape
    non_white = float((pixels < 0.95).any(axis=-1).mean())
    colours = len(np.unique((pixels * 255).round().astype(np.uint8).reshape(-1, 3), axis=0))
    print(f"screenshot {kept}: non-white share {non_white:.3%}, {colours} distinct colours")
    assert non_white > 0.03, f"screenshot looks blank: only {non_white:.3%} of pixels are not white"
    assert colours > 32, f"screenshot has only {colours} distinct colours"


def test_chromium_dom_has_attempts_table_and_no_script(report_html, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", report_html.as_uri(), width=WIDTH, height=HEIGHT).stdout
    assert '<table id="attempts">' in dom
    parsed = _Dom()
    parsed.feed(dom)
    parsed.close()
    assert parsed.attempts_tables == 1
    assert parsed.attempt_rows >= 1, "table#attempts has no body row"
    assert parsed.scripts == 0, "the hostile variant name became a <script> element"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom, "the hostile variant name is not shown as text"


# The report has no script of its own; this copy of it gets one that measures its tables as laid out and writes
# the figures into the page, which --dump-dom then returns.
MEASURE = """<script>
window.addEventListener("load", () => {
const root = document.documentElement, found = {viewport: root.clientWidth, page: root.scrollWidth,
                                                screen: window.innerHeight, tables: {}, boxes: {}};
for (const table of document.querySelectorAll("table[id]")) {
  const box = table.getBoundingClientRect(), frame = table.parentElement;
  found.tables[table.id] = {right: Math.ceil(box.right), width: Math.ceil(box.width),
                            scroll: frame.scrollWidth, visible: frame.clientWidth};
}
for (const part of document.querySelectorAll("#card, #cost-volume img")) {
  const box = part.getBoundingClientRect();
  found.boxes[part.id || part.parentElement.id] = {top: Math.floor(box.top), bottom: Math.ceil(box.bottom),
    right: Math.ceil(box.right), scroll: part.scrollWidth, visible: part.clientWidth,
    loaded: part.naturalWidth === undefined ? true : part.naturalWidth > 0,
    text: part.innerText || "", background: getComputedStyle(part).backgroundColor};
}
const moments = [...document.querySelectorAll("#card .nw")];  // each date or time of the card: on one line or not
found.moments = {count: moments.length,
                 broken: moments.filter(m => m.getClientRects().length > 1).map(m => m.textContent)};
const out = document.createElement("pre");
out.id = "measured";
out.hidden = true;  // measured already; hidden, so its long line never widens the screenshot
out.textContent = JSON.stringify(found);
document.body.appendChild(out);
});
</script>"""


def measured(page: Path, tmp_path: Path, width: int, height: int, shot: str = "") -> dict:
    """The page's figures as Chromium lays them out at this window size (its screenshot kept when named)."""
    harness = tmp_path / "measure.html"
    harness.write_text(page.read_text(encoding="utf-8").replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    extra = [f"--screenshot={tmp_path / shot}"] if shot else []
    dom = chromium(tmp_path, *extra, "--dump-dom", harness.as_uri(), width=width, height=height).stdout
    if shot:
        print(f"screenshot {keep(tmp_path / shot, 'report')}")
    found = json.loads(html.unescape(re.search(r'<pre id="measured"[^>]*>(.*?)</pre>', dom, re.DOTALL).group(1)))
    print(json.dumps(found, indent=1))
    return found


def test_the_decision_configuration_plan_and_attempts_tables_fit_1336_px(report_html, tmp_path):
    found = measured(report_html, tmp_path, WIDTH, HEIGHT)
    assert found["viewport"] <= WIDTH and found["page"] <= found["viewport"], f"the page scrolls sideways: {found}"
    for ident in FITTING:
        table = found["tables"][ident]
        assert table["right"] <= found["viewport"], f"table#{ident} ends at {table['right']} px, past the viewport"
        assert table["scroll"] <= table["visible"], f"table#{ident} scrolls sideways in its frame: {table}"


@pytest.fixture(scope="module")
def decided_html(tmp_path_factory) -> Path:
    """A demo-like report: eight configurations on one CPU, long variant names, both figures drawn."""
    path = tmp_path_factory.mktemp("decided") / "report.html"
    path.write_text(render.page(decided_report()), encoding="utf-8")
    return path


def test_the_decision_card_and_first_table_fit_600_px_without_scrolling_sideways(decided_html, tmp_path):
    found = measured(decided_html, tmp_path, 600, 1600, "report-600.png")
    assert found["viewport"] <= 600 and found["page"] <= found["viewport"], f"the page scrolls sideways: {found}"
    card, table = found["boxes"]["card"], found["tables"]["decision"]
    assert card["right"] <= found["viewport"] and card["scroll"] <= card["visible"], f"the card is cut: {card}"
    assert table["right"] <= found["viewport"] and table["scroll"] <= table["visible"], f"table#decision scrolls: {table}"
    assert found["moments"]["count"] >= 2 and not found["moments"]["broken"], found["moments"]  # ends by, deadline
    assert "`" not in card["text"], card["text"]  # inline code as code, never raw backticks (issue 66)


def test_the_cost_against_volume_figure_is_on_the_first_screen_at_1440_by_900(decided_html, tmp_path):
    found = measured(decided_html, tmp_path, 1440, 900, "report-1440x900.png")
    figure = found["boxes"]["cost-volume"]
    assert figure["loaded"] and figure["bottom"] - figure["top"] > 200, f"the figure is not drawn: {figure}"
    assert found["screen"] <= 900 and figure["bottom"] <= found["screen"], f"the figure ends below the first screen: {found}"
    assert found["page"] <= found["viewport"], f"the page scrolls sideways at 1,440 px: {found}"


@pytest.mark.parametrize("width", [600, 1440])
def test_an_undecided_card_says_rent_run_in_doubt_in_amber_uncut(tmp_path, width):
    from tests.test_report_card import NOISE_PRICED

    page = tmp_path / "report.html"
    page.write_text(render.page(decided_report(changed=NOISE_PRICED)), encoding="utf-8")
    found = measured(page, tmp_path, width, 1600, f"report-undecided-{width}.png")
    card = found["boxes"]["card"]
    assert card["right"] <= found["viewport"] and card["scroll"] <= card["visible"], f"the card is cut: {card}"
    said = [line.split(":")[0] for line in card["text"].splitlines() if line.strip()]
    assert said == ["No decision", "Rent", "Run", "In doubt", "Settle"], card["text"]
    assert "4.50 USD committed" in card["text"] and "0.50 USD: the rent beyond" in card["text"]
    assert card["background"] == "rgb(255, 243, 205)", card  # amber, never the decided green
