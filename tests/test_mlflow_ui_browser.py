"""The MLflow UI itself, in headless Chromium (issue 16): after a small campaign and its report, the runs table
shows every pass under its own name and the decision run's page shows its description.

The store is written by the product's own commands (`gpucost campaign`, then `gpucost report`) and served by
`mlflow server`; Chromium renders the React app (--virtual-time-budget lets it fetch and draw) and dumps the DOM.
Screenshots of each page are kept in test-artifacts/mlflow-ui/ (gitignored). Needs Debian's `chromium`.
"""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema
from tests.browser import chromium, keep
from tests.helpers import VARIANTS, write_protocol
from tests.servers import MlflowServer

pytestmark = pytest.mark.integration  # a real campaign, an mlflow server and headless Chromium

EXPERIMENT = "ui-check"
WIDTH, HEIGHT = 1336, 1000
RENDER = "--virtual-time-budget=20000"  # virtual milliseconds for the app to load, fetch the runs and draw them
GPUCOST = str(Path(sys.executable).parent / "gpucost")


def _run(command: list[str], folder: Path, env: dict) -> None:
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"


@pytest.fixture(scope="module")
def served(tmp_path_factory, corpus_dir, model_dir):
    """A campaign of 2 variants x 2 passes and its report in a fresh SQLite store, served by `mlflow server`."""
    folder = tmp_path_factory.mktemp("ui-store")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    protocol = write_protocol(folder / "protocol.yaml")
    protocol.write_text(protocol.read_text().replace("passes_per_variant: 5", "passes_per_variant: 2")
                        + "plan: {setup_hours: 0.5, waiting_hours: 0.25, planned_restarts: 1}\n")
    env = {key: value for key, value in os.environ.items()
           if key not in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME", "MLFLOW_EXPERIMENT_ID")}
    env.update(MLFLOW_TRACKING_URI=uri, GPUCOST_SPOOL=str(folder / "spool"))
    common = ["--variants-file", str(VARIANTS), "--protocol", str(protocol), "--experiment", EXPERIMENT]
    _run([GPUCOST, "campaign", "--variants", "batch1,batch8", "--passes", "2", "--corpus",
          str(corpus_dir / "comparison.jsonl"), "--model", str(model_dir), *common], folder, env)
    _run([GPUCOST, "report", "--out", str(folder / "report"), *common], folder, env)
    server = MlflowServer(backend_uri=uri, folder=folder / "server").start()
    try:
        yield server, MlflowClient(tracking_uri=uri)
    finally:
        server.stop()


def _runs(client: MlflowClient, role: str) -> list:
    experiment = client.get_experiment_by_name(EXPERIMENT)
    return client.search_runs([experiment.experiment_id], filter_string=f"tags.`{schema.ROLE}` = '{role}'")


def _show(tmp_path: Path, url: str, name: str) -> str:
    """The page's DOM once the app has drawn it; its screenshot is kept as test-artifacts/mlflow-ui/<name>.png."""
    shot = tmp_path / f"{name}.png"
    dom = chromium(tmp_path, RENDER, f"--screenshot={shot}", "--dump-dom", url, width=WIDTH, height=HEIGHT,
                   timeout_s=180).stdout
    if shot.exists():
        print(f"screenshot {keep(shot, 'mlflow-ui')}")
    return dom


def _text(fragment: str) -> str:
    """The visible text of an HTML fragment, whitespace collapsed."""
    fragment = re.sub(r"<(script|style)\b.*?</\1>", " ", fragment, flags=re.DOTALL)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def test_the_runs_table_shows_every_pass_under_its_own_name(served, tmp_path):
    server, client = served
    passes = _runs(client, "benchmark")
    names = [run.info.run_name for run in passes]
    assert len(names) == 4 and len(set(names)) == 4, f"pass runs share a name: {names}"
    experiment_id = passes[0].info.experiment_id
    # Sorted by pass_s the table is flat: sorted by date (the default) it nests the passes under their campaign run.
    order = quote("metrics.`pass_s`")
    url = f"{server.uri}/#/experiments/{experiment_id}/runs?workflowType=machine_learning&orderByKey={order}&orderByAsc=true"
    shown = _text(_show(tmp_path, url, "runs-table"))
    assert "Run Name" in shown, f"the runs table did not render: {shown[:2000]}"
    missing = [name for name in names if name not in shown]
    assert not missing, f"pass names not in the runs table: {missing}\n{shown[:3000]}"


def test_the_decision_run_page_shows_its_description(served, tmp_path):
    server, client = served
    (decision,) = _runs(client, "decision")
    note = decision.data.tags.get("mlflow.note.content", "")
    assert note, "the decision run has no description (mlflow.note.content)"
    dom = _show(tmp_path, f"{server.uri}/#/experiments/{decision.info.experiment_id}/runs/{decision.info.run_id}",
                "decision-run")
    found = re.search(r'data-testid="note-editor-preview-content"[^>]*>(.*?)</div>', dom, re.DOTALL)
    assert found, f"no description on the decision run's page: {_text(dom)[:3000]}"
    shown = _text(found.group(1))
    words = re.findall(r"[A-Za-z0-9]+", note)[:12]  # the note is Markdown; its first words survive rendering
    assert re.search(r"\W+".join(words), shown), f"the description shown is not the note:\n{shown[:2000]}\n---\n{note[:2000]}"
