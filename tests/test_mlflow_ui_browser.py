"""The MLflow UI itself, in headless Chromium (issues 16, 30 and 52): after a small campaign, its confirmation and
its report, the experiment opens on its runs table (not the GenAI overview); the link gpucost prints is the tracking
server's own and shows every benchmark pass, and nothing else, under its own name sorted by pass_s with its status,
standing and committed_usd (at 1,440 px, the standing uncut, and the Charts tab opening on pass_s and inputs/s);
confirmation and deliverable runs have views of their own; the decision run's page shows its description (the table
sorted by cost with padded cells, the machine named, the price dated) and metrics, its artifact pane report.html.

The store is written by the product's own commands (`gpucost campaign`, `confirm`, then `report`) and served by
`mlflow server`; Chromium renders the React app (--virtual-time-budget lets it fetch and draw) and dumps the DOM.
Screenshots of each page are kept in test-artifacts/mlflow-ui/ (gitignored). Needs Debian's `chromium`.
"""

from __future__ import annotations

import datetime as dt
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.core.names import RATE_VS_SLOWEST, REPETITIONS, STEADY_LAP, STEADY_LAP_S
from gpucost_mlflow.report import decision_text
from gpucost_mlflow.tracking import schema, ui
from gpucost_mlflow.tracking.ui import LOCAL_UI
from tests.browser import chromium, keep
from tests.helpers import VARIANTS, write_protocol
from tests.servers import MlflowServer

pytestmark = pytest.mark.integration  # a real campaign, an mlflow server and headless Chromium

EXPERIMENT = "ui-check"
WIDTH, HEIGHT = 1336, 1000
WIDE = 1920  # the passes view's six columns beside MLflow's assistant pane, none scrolled out of the grid
RENDER = "--virtual-time-budget=20000"  # virtual milliseconds for the app to load, fetch the runs and draw them
GPUCOST = str(Path(sys.executable).parent / "gpucost")


def _run(command: list[str], folder: Path, env: dict) -> str:
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def served(tmp_path_factory, corpus_dir, model_dir):
    """A fresh SQLite store as `make demo` leaves one, on the test slice: a campaign of 2 variants x 2 passes, the
    chosen configuration's confirmation (1 s) and a report priced with `gpucost catalog example`, its window placed at
    the report's reading. The store is served by `mlflow server` and the report is read through it, as a team
    reads a shared store, so the link it prints is the server's own."""
    folder = tmp_path_factory.mktemp("ui-store")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    protocol = write_protocol(folder / "protocol.yaml")
    text = re.sub(r"(?m)^deadline: .*$", "deadline: 96h", protocol.read_text())
    protocol.write_text(text.replace("passes_per_variant: 5", "passes_per_variant: 2")
                        + "plan: {start: at_report, setup_hours: 0.5, waiting_hours: 0.25, planned_restarts: 1}\n"
                        + "confirmation: {min_s: 1}\n")
    env = {key: value for key, value in os.environ.items()
           if key not in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID", ui.UI_URL)}
    env.update(MLFLOW_TRACKING_URI=uri, GPUCOST_SPOOL=str(folder / "spool"))
    common = ["--variants-file", str(VARIANTS), "--protocol", str(protocol), "--experiment", EXPERIMENT]
    catalog = folder / "this-machine.csv"
    _run([GPUCOST, "catalog", "example", "--out", str(catalog), "--price-per-hour", "1.00"], folder, env)
    _run([GPUCOST, "campaign", "--variants", "batch1,batch8", "--passes", "2", "--corpus",
          str(corpus_dir / "comparison.jsonl"), "--model", str(model_dir), *common], folder, env)
    _run([GPUCOST, "confirm", "--catalog", str(catalog), "--corpus", str(corpus_dir / "confirmation.jsonl"),
          "--model", str(model_dir), *common], folder, env)
    server = MlflowServer(backend_uri=uri, folder=folder / "server").start()
    try:
        printed = _run([GPUCOST, "report", "--catalog", str(catalog), "--out", str(folder / "report"), *common],
                       folder, {**env, "MLFLOW_TRACKING_URI": server.uri})
        yield server, MlflowClient(tracking_uri=uri), printed
    finally:
        server.stop()


def _link(served) -> str:
    """The runs link `gpucost report` printed: the tracking server's own address, never a port assumed."""
    server, _, printed = served
    (link,) = re.findall(rf"^MLflow UI: ({re.escape(server.uri)}/#\S+)$", printed, re.MULTILINE)
    return link


def _runs(client: MlflowClient, role: str) -> list:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    kind = "tags" if role in (schema.CAMPAIGN_ROLE, schema.DECISION_ROLE) else "params"  # a pass's role is a fact
    return client.search_runs([experiment.experiment_id], filter_string=f"{kind}.`{schema.ROLE}` = '{role}'")


def _show(tmp_path: Path, url: str, name: str, width: int = WIDTH) -> str:
    """The page's DOM once the app has drawn it; its screenshot is kept as test-artifacts/mlflow-ui/<name>.png."""
    shot = tmp_path / f"{name}.png"
    dom = chromium(tmp_path, RENDER, f"--screenshot={shot}", "--dump-dom", url, width=width, height=HEIGHT,
                   timeout_s=180).stdout
    if shot.exists():
        print(f"screenshot {keep(shot, 'mlflow-ui')}")
    return dom


def _text(fragment: str) -> str:
    """The visible text of an HTML fragment, whitespace collapsed."""
    fragment = re.sub(r"<(script|style)\b.*?</\1>", " ", fragment, flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _experiment_opens_on_the_runs_table_not_the_genai_overview(served, tmp_path):
    server, client, _ = served
    experiment = client.get_experiment_by_name(EXPERIMENT)
    assert experiment.tags[schema.EXPERIMENT_KIND] == schema.MODEL_DEVELOPMENT
    # The experiment's own page, no tab named: MLflow picks where it lands (runs for model training, GenAI's overview
    # otherwise); MLflow 3.17 takes the side from the link's workflowType, earlier releases from the kind tag.
    shown = _text(_show(tmp_path, f"{server.uri}/#/experiments/{experiment.experiment_id}?{ui.MODEL_TRAINING}",
                        "experiment-landing"))
    assert "Run Name" in shown, f"the experiment did not open on its runs table: {shown[:2000]}"
    assert "Detect Issues" not in shown and "Token Usage" not in shown, f"the GenAI overview opened: {shown[:2000]}"


def _printed_link_shows_every_benchmark_pass_sorted_by_pass_s_with_its_status_standing_and_committed_cost(served,
                                                                                                         tmp_path):
    server, client, printed = served
    link = _link(served)
    passes = _runs(client, "benchmark")
    names = [run.info.run_name for run in passes]
    assert len(names) == 4 and len(set(names)) == 4, f"pass runs share a name: {names}"
    assert link == f"{server.uri}/{ui.runs_path(passes[0].info.experiment_id)}"
    assert server.uri == LOCAL_UI or LOCAL_UI not in printed, f"a link assumes {LOCAL_UI}:\n{printed}"
    shown = _text(_show(tmp_path, link, "printed-link", width=WIDE))
    assert "Run Name" in shown and ui.PASSES_VIEW_NAME in shown, f"the passes view did not open: {shown[:2000]}"
    assert f"Sort: {STEADY_LAP_S}" in shown  # the one duration the decision reads, under its one name
    # committed_usd is a column once a pass carries it: when the decision committed a plan (on a loaded machine the
    # chosen configuration's confirmation may not hold, and nothing is committed)
    (decision,) = _runs(client, "decision")
    decided = decision.data.tags.get(schema.DECISION) == "decided"
    committed = (schema.in_currency(schema.PASS_COMMITTED, "usd"),) if decided else ()
    for column in (schema.STATUS, schema.VARIANT, schema.STANDING, schema.ACCEPTED, STEADY_LAP_S, schema.INPUTS_PER_S,
                   *committed):
        assert column in shown, f"column {column} not shown: {shown[:3000]}"
    fastest_first = [run.info.run_name for run in sorted(passes, key=lambda run: run.data.metrics[STEADY_LAP_S])]
    where = [shown.find(name) for name in fastest_first]
    assert -1 not in where and where == sorted(where), f"passes not sorted by steady lap: {fastest_first}\n{shown[:3000]}"
    statuses = {run.data.tags[schema.STATUS] for run in passes}
    assert all(f" {status} " in shown for status in statuses), f"statuses {statuses} not shown: {shown[:3000]}"
    others = _runs(client, "decision") + _runs(client, "campaign") + _runs(client, "confirmation")
    assert not any(run.info.run_name in shown for run in others), f"not only benchmark passes: {shown[:3000]}"


def _confirmation_and_deliverable_runs_have_views_of_their_own(served, tmp_path):
    _, client, _ = served
    confirmations = _runs(client, "confirmation")
    # the chosen configuration's, or each tied one's (how the durations fall on a loaded machine decides which)
    assert 1 <= len(confirmations) <= 2, [run.info.run_name for run in confirmations]
    (confirming,) = [key for key, (_, role) in ui.VIEWS.items() if role == "confirmation"]
    shown = _text(_show(tmp_path, _link(served).replace(ui.PASSES_VIEW, confirming), "confirmation-view", width=WIDE))
    assert ui.VIEWS[confirming][0] in shown, f"the confirmation view did not open: {shown[:2000]}"
    assert all(run.info.run_name in shown for run in confirmations), f"confirmation runs not shown: {shown[:3000]}"
    # its own columns: the verdict the report gave each run, its rate against the slowest benchmark pass, repetitions
    for column in (schema.CONFIRMATION, RATE_VS_SLOWEST, REPETITIONS):
        assert column in shown, f"confirmation column {column} not shown: {shown[:3000]}"
    verdicts = {run.data.tags.get(schema.CONFIRMATION) for run in confirmations}
    words = {"confirmed", "not confirmed", "not yet confirmed", "excluded", "not counted", schema.REFERENCE_OUTPUTS}
    assert verdicts <= words and all(verdict in shown for verdict in verdicts), (verdicts, shown[:3000])
    assert schema.STANDING not in shown, "the confirmation view shows the passes' standing column"
    assert not any(run.info.run_name in shown for run in _runs(client, "benchmark")), shown[:3000]
    (delivering,) = [key for key, (_, role) in ui.VIEWS.items() if role == "deliverable"]
    shown = _text(_show(tmp_path, _link(served).replace(ui.PASSES_VIEW, delivering), "deliverable-view", width=WIDE))
    assert ui.VIEWS[delivering][0] in shown, f"the deliverable view did not open: {shown[:2000]}"
    assert not any(run.info.run_name in shown for run in confirmations + _runs(client, "benchmark")), shown[:3000]


def _decision_run_page_shows_its_description(served, tmp_path):
    """The decision run's description: the note, the table sorted by committed cost with padded cells, the machine
    named as one could order it and the price's date; nothing counted outside a campaign that was not. The page is
    the one `gpucost report` printed as the decision run's own link; its name, tag and description say whether the
    one configuration it runs (of a tie, named) was confirmed."""
    server, client, printed = served
    (decision,) = _runs(client, "decision")
    note = decision.data.tags.get("mlflow.note.content", "")
    assert note, "the decision run has no description (mlflow.note.content)"
    own = f"{server.uri}/{ui.run_path(decision.info.experiment_id, decision.info.run_id)}"
    assert f"Decision run: {own}" in printed.splitlines(), printed
    dom = _show(tmp_path, own, "decision-run")
    assert decision.info.run_name in _text(dom) and len(decision.info.run_name) <= decision_text.DECISION_NAME
    found = re.search(r'data-testid="note-editor-preview-content"[^>]*>(.*?)</div>', dom, re.DOTALL)
    assert found, f"no description on the decision run's page: {_text(dom)[:3000]}"
    shown = _text(found.group(1))
    words = re.findall(r"[A-Za-z0-9]+", note)[:12]  # the note is Markdown; its first words survive rendering
    assert re.search(r"\W+".join(words), shown), f"the description shown is not the note:\n{shown[:2000]}\n---\n{note[:2000]}"
    cells = [re.findall(r"<td>(.*?)</td>", row, re.DOTALL) for row in re.findall(r"<tr>(.*?)</tr>", found.group(1),
                                                                                   re.DOTALL)]
    rows = [row for row in cells if row]
    assert rows and all(cell.startswith("&nbsp;") and cell.endswith("&nbsp;") for row in rows for cell in row), rows
    # Priced rows first, cheapest first; a configuration left out (on a loaded machine its confirmation may not hold)
    # shows its reason in that cell instead, after them.
    cells = [html.unescape(row[5]).replace("\xa0", " ").strip() for row in rows]
    priced = [float(cell.split()[0]) for cell in cells if cell.endswith("USD")]
    assert priced == sorted(priced) and cells[:len(priced)] == [c for c in cells if c.endswith("USD")], rows
    assert "outside any campaign" not in shown and "undated" not in shown, shown[-2000:]
    assert f"median {STEADY_LAP}" in shown and "pass_s" not in shown, shown[:2000]  # one duration, one name
    tags = decision.data.tags
    if tags.get(schema.DECISION) == "decided":
        verdict = tags[schema.DECISION_CONFIRMATION].split(":")[0]
        assert verdict in ("confirmed", "not yet confirmed") and verdict in decision.info.run_name, tags
        assert f"{verdict.capitalize()}:" in shown, shown[:2000]
        if " · tied" in decision.info.run_name:  # a tie names the one configuration it runs, the one confirmed
            assert tags[schema.DECISION_RUN] in tags[schema.DECISION_CONFIRMATION]
            assert "of 2 tied" in tags[schema.DECISION_CONFIRMATION], tags
    if decision.data.tags.get(schema.DECISION) == "decided":  # the machine and the price's date are the Rent's
        today = dt.datetime.now(dt.timezone.utc).date().isoformat()
        assert re.search(r"on this-machine \d+ vCPU \d+ GiB:", shown), f"the machine is not named: {shown[:2000]}"
        assert f"an example price as of {today} (0 days), not a quote" in shown, f"price not dated: {shown[-2000:]}"


def _decision_run_page_shows_its_metrics_and_its_artifact_pane_renders_the_report(served, tmp_path):
    server, client, _ = served
    (decision,) = _runs(client, "decision")
    assert decision.data.metrics, "the decision run logged no metric"
    page = f"{server.uri}/{ui.run_path(decision.info.experiment_id, decision.info.run_id)}"
    shown = _text(_show(tmp_path, page, "decision-run-metrics"))
    counted = re.search(r"Metrics \((\d+)\)", shown)
    assert counted and int(counted.group(1)) == len(decision.data.metrics), f"metrics not shown: {shown[:3000]}"
    pane = page.replace(f"/runs/{decision.info.run_id}?", f"/runs/{decision.info.run_id}/artifacts/report.html?")
    dom = _show(tmp_path, pane, "decision-run-report")
    # MLflow fetches report.html and shows it in a sandboxed frame whose source is the fetched page as a blob.
    assert re.search(r'<iframe[^>]*class="mlflow-html-iframe"[^>]*src="blob:', dom) or re.search(
        r'<iframe[^>]*src="blob:[^"]*"[^>]*class="mlflow-html-iframe"', dom), f"report.html not rendered: {_text(dom)[:3000]}"
    assert "couldn't load your file" not in _text(dom)


def _printed_link_at_1440_px_shows_the_standing_uncut_and_its_charts_open_on_pass_s(served, tmp_path):
    _, client, _ = served
    link = _link(served)
    dom = _show(tmp_path, link, "printed-link-1440", width=1440)
    header = re.search(r'<div[^>]*col-id="tags\.`gpucost\.standing`"[^>]*>', dom)
    assert header, f"no standing column at 1,440 px: {_text(dom)[:3000]}"
    width = re.search(r"width: (\d+)px", header.group(0))
    columns = re.findall(r'col-id="([^"]+)"[^>]*style="([^"]*)"', dom)
    assert width and int(width.group(1)) >= ui.STANDING_WIDTH_PX, f"the standing column is cut: {dict(columns)}"
    standings = {run.data.tags[schema.STANDING] for run in _runs(client, "benchmark")}
    assert all(standing in _text(dom) for standing in standings), f"standings {standings} not shown"
    charts = _text(_show(tmp_path, f"{link}&compareRunsMode=CHART", "printed-link-charts", width=1440))
    section = charts.find(ui.SECTION_NAME)
    assert section >= 0, f"the charts do not open on gpucost's section: {charts[:3000]}"
    assert 0 <= charts.find(STEADY_LAP_S, section) < charts.find("load_s", section) or "load_s" not in charts[section:]


def _report_links(served) -> list[str]:
    """Every run link report.html holds."""
    _, client, _ = served
    (decision,) = _runs(client, "decision")
    page = Path(client.download_artifacts(decision.info.run_id, "report.html")).read_text(encoding="utf-8")
    return [html.unescape(href) for href in re.findall(r'<a href="([^"]+)"', page)]


def _pass_run_page_shows_at_most_8_gpucost_tags_and_its_description(served, tmp_path):
    """Opened from a link of report.html: every one of its links opens the served UI, never an assumed port."""
    server, client, _ = served
    run = _runs(client, "benchmark")[0]
    links = _report_links(served)
    assert links and all(link.startswith(f"{server.uri}/#/") for link in links), links[:5]
    (link,) = {link for link in links if run.info.run_id in link}
    dom = _show(tmp_path, link, "pass-run")
    # MLflow draws each tag as a key-value chip titled with its key; the facts are in the Parameters table instead.
    chips = re.findall(r'role="status" title="(gpucost\.[^"]+)"[^>]*data-component-id="[^"]*keyvaluetag', dom)
    assert 3 <= len(chips) <= 8, f"the pass page shows {len(chips)} gpucost tags: {chips}"
    assert schema.STATUS in chips and schema.CHECKS in chips and schema.HOST not in chips
    found = re.search(r'data-testid="note-editor-preview-content"[^>]*>(.*?)</div>', dom, re.DOTALL)
    assert found and f"{run.data.tags[schema.VARIANT]} · " in _text(found.group(1)), "no description on the pass page"
    assert run.info.run_name in _text(dom) and STEADY_LAP in _text(found.group(1))


def test_the_experiment_opens_on_its_runs_the_printed_link_sorts_passes_and_the_decision_shows_its_note(served, tmp_path):
    """One test over the served store (a module fixture built once: with xdist, separate tests of this module would
    each build it on their own worker): the experiment's landing page, the printed link's view, the decision run, a
    pass run."""
    _experiment_opens_on_the_runs_table_not_the_genai_overview(served, tmp_path)
    _printed_link_shows_every_benchmark_pass_sorted_by_pass_s_with_its_status_standing_and_committed_cost(served,
                                                                                                         tmp_path)
    _confirmation_and_deliverable_runs_have_views_of_their_own(served, tmp_path)
    _decision_run_page_shows_its_description(served, tmp_path)
    _decision_run_page_shows_its_metrics_and_its_artifact_pane_renders_the_report(served, tmp_path)
    _printed_link_at_1440_px_shows_the_standing_uncut_and_its_charts_open_on_pass_s(served, tmp_path)
    _pass_run_page_shows_at_most_8_gpucost_tags_and_its_description(served, tmp_path)
