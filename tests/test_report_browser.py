"""report.html in a real browser: headless Chromium renders a non-blank page with the attempts table, no live script.

Needs Debian's `chromium` (/usr/bin/chromium); .ci/run installs it. Without it this test fails, it never skips.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpucost_mlflow.core.catalog import Package
from gpucost_mlflow.core.decision import Assessment, Configuration
from gpucost_mlflow.core.forecast import forecast
from gpucost_mlflow.core.plans import covering_plans
from gpucost_mlflow.core.stats import Durations, separate
from gpucost_mlflow.report import plots, render
from gpucost_mlflow.report.tables import Summary

CHROMIUM = Path("/usr/bin/chromium")
HOSTILE = "<script>alert(1)</script>"
WIDTH, HEIGHT = 1400, 2000


def _report() -> render.Report:
    """Two configurations on one device, three figures, and an attempts table with one hostile variant name."""
    fast = Configuration(device="cpu", variant="batch8", statuses=["accepted"] * 5,
                         durations=Durations((10.2, 10.5, 10.1, 10.4, 10.3)),
                         medians={"load_s": 2.0, "warmup_s": 1.0, "eval_s": 0.5, "export_s": 0.2},
                         accepted_deliverables=1)
    slow = Configuration(device="cpu", variant="batch1", statuses=["accepted"] * 4 + ["failed"],
                         durations=Durations((30.5, 31.0, 29.8, 30.2)),
                         medians={"load_s": 2.1, "warmup_s": 1.1, "eval_s": 0.5, "export_s": 0.2})
    package = Package(provider="Example Cloud", catalog_version="2025-01", gpu="none", device_names=("cpu",),
                      gpus_per_lot=1, days=7, price_per_lot=Decimal("120.00"), currency="EUR",
                      source="catalog/example.yaml", line=3)
    plan = {"setup_hours": 1.0, "waiting_hours": 2.0, "planned_restarts": 1, "start": dt.datetime(2025, 3, 1, 9)}
    outlook = forecast(plan, 1, fast.durations, fast.medians, (40.0,) * 9)
    plans = covering_plans([package], Decimal(str(round(outlook.hours, 6))))
    assessments = [
        Assessment(fast, True, "feasible: 5 accepted passes", forecast=outlook,
                   forecast_end=dt.datetime(2025, 3, 2, 12, 30), deadline_status="met", meets_deadline=True,
                   plans=plans, priced=plans[0].describe(), cost_per_validated=Decimal("120.00")),
        Assessment(slow, False, "infeasible: a failed pass", priced="not priced: infeasible"),
    ]
    summaries = [
        Summary(fast, {"mem_peak_rss_bytes": 900 * 2**20}, "rss", 0.71, {"pass": 5}),
        Summary(slow, {"mem_peak_rss_bytes": 600 * 2**20}, "rss", 0.70, {"pass": 4, "(none: failed)": 1}),
    ]
    rows = []
    for config in (fast, slow):
        for index, status in enumerate(config.statuses):
            done = index < len(config.durations.values)
            rows.append({
                "pass_index": len(rows), "round": index, "position": 0 if config is fast else 1,
                "variant": config.variant, "device": config.device, "status": status,
                "pass_s": config.durations.values[index] if done else None,
                "quality_verdict": "pass" if done else "", "macro_f1": 0.71 if done else None,
                "expected_ids": 30, "observed_ids": 30 if done else 0, "ids_match": done, "corpus_accepted": done,
                "completed_entries": 30 if done else 0, "reason": "" if done else "worker exited with code 1",
                "mfu_useful": 0.27 if done else None, "mfu_padded": 0.67 if done else None,
                "mfu_reason": "" if done else "no completed pass (worker exited with code 1)", "overlapped_with": "",
                "run_id": f"{len(rows):032x}",
            })
    rows[-1]["variant"] = HOSTILE  # a string from a run must reach the page as text, never as markup
    attempts = pd.DataFrame(rows)
    assert set(render.ATTEMPT_COLUMNS) <= set(attempts.columns)
    return render.Report(
        experiment="browser-check", question="Which batch size validates the corpus cheapest before the deadline?",
        protocol_digest="0123456789abcdef" * 4, catalog="2025-01 (catalog/example.yaml)",
        decision="Take batch8 on cpu: 120.00 EUR committed.", warnings=["A synthetic report built by the test."],
        attempts=attempts, summaries=summaries,
        separations=[("batch on cpu", separate("batch8", fast.durations.values, "batch1", slow.durations.values))],
        assessments=assessments, deadline="2025-03-10T00:00:00", plan=plan,
        figures={"Pass durations": plots.durations(summaries), "Peak memory": plots.memory(summaries),
                 "Committed cost": plots.cost(assessments)},
    )


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium), as .ci/run does")
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               # /etc/chromium.d/dev-shm adds this only when its /dev/shm size check works; CI containers have 64 MiB
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}", *args]
    env = {**os.environ, "HOME": str(tmp_path)}
    env.pop("DISPLAY", None)
    # Own session, so a timeout kills the browser's renderer and zygote children too (they hold the pipes).
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                               start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"chromium did not finish within 60 s: {command}\n{stderr[-4000:]}")
    assert process.returncode == 0, f"chromium exited {process.returncode}: {command}\n{stderr[-4000:]}"
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


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
    page = render.page(_report())
    source = _Dom()
    source.feed(page)
    source.close()
    # Checked before any browser starts: a live alert() blocks headless Chromium until the 60 s timeout.
    assert source.scripts == 0, "render.page let the hostile variant name through as a <script> element"
    path.write_text(page, encoding="utf-8")
    return path


def test_chromium_renders_a_nonblank_page(report_html, tmp_path):
    import matplotlib.image

    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", report_html.as_uri())
    assert shot.exists() and shot.stat().st_size > 0, "chromium wrote no screenshot"
    pixels = matplotlib.image.imread(str(shot))[..., :3]  # floats in [0, 1]
    assert pixels.shape[:2] == (HEIGHT, WIDTH), pixels.shape
    non_white = float((pixels < 0.95).any(axis=-1).mean())
    colours = len(np.unique((pixels * 255).round().astype(np.uint8).reshape(-1, 3), axis=0))
    print(f"screenshot {shot}: non-white share {non_white:.3%}, {colours} distinct colours")
    assert non_white > 0.03, f"screenshot looks blank: only {non_white:.3%} of pixels are not white"
    assert colours > 32, f"screenshot has only {colours} distinct colours"


def test_chromium_dom_has_attempts_table_and_no_script(report_html, tmp_path):
    dom = _chromium(tmp_path, "--dump-dom", report_html.as_uri()).stdout
    assert '<table id="attempts">' in dom
    parsed = _Dom()
    parsed.feed(dom)
    parsed.close()
    assert parsed.attempts_tables == 1
    assert parsed.attempt_rows >= 1, "table#attempts has no body row"
    assert parsed.scripts == 0, "the hostile variant name became a <script> element"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom, "the hostile variant name is not shown as text"
