"""The documentation's screenshots (docs/images/), taken from a finished `make demo` with the browser tests' own
headless Chromium and test server: the what-if report's decision card, the printed link's passes view and its
Charts tab, the decision run's page and its artifact pane showing report.html.

Run from the repository root after `make demo`: `.venv/bin/python -m tests.screenshots` (options: --help).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from mlflow.tracking import MlflowClient

from gpucost_mlflow.tracking import schema, search, ui
from tests.browser import chromium
from tests.servers import MlflowServer

RENDER = "--virtual-time-budget=30000"  # the app loads, fetches and draws before the picture is taken
# A screenshot leaves out a sandboxed iframe drawn in another process: the artifact pane's report.html stays blank.
ONE_PROCESS = ("--disable-site-isolation-trials", "--disable-features=IsolateOrigins,site-per-process")
WIDE = 1920  # MLflow's assistant pane takes a third of the window; the runs table keeps its own width beside it


def _shoot(profile: Path, url: str, out: Path, width: int = WIDE, height: int = 1000) -> None:
    chromium(profile, RENDER, *ONE_PROCESS, "--hide-scrollbars", f"--screenshot={out}", url, width=width,
             height=height, timeout_s=240)
    print(f"{out} <- {url}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiment", default="gpucost-demo")
    parser.add_argument("--report", type=Path, default=Path("reports/gpucost-demo-what-if/report.html"))
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    uri = os.environ.get("MLFLOW_TRACKING_URI", f"sqlite:///{Path('mlflow.db').resolve()}")
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(args.experiment)
    *_, decision = search.all_runs(client, experiment.experiment_id, f"tags.`{schema.ROLE}` = '{schema.DECISION_ROLE}'")
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        profile = Path(folder)
        _shoot(profile, args.report.resolve().as_uri(), args.out / "report-card.png", width=1440, height=900)
        server = MlflowServer(backend_uri=uri, folder=profile / "server").start()
        try:
            runs = f"{server.uri}/{ui.runs_path(experiment.experiment_id)}"
            _shoot(profile, runs, args.out / "mlflow-passes.png")
            _shoot(profile, f"{runs}&compareRunsMode=CHART", args.out / "mlflow-charts.png")
            run = f"{server.uri}/{ui.run_path(experiment.experiment_id, decision.info.run_id)}"
            _shoot(profile, run, args.out / "mlflow-decision-run.png")
            pane = run.replace(f"/runs/{decision.info.run_id}?", f"/runs/{decision.info.run_id}/artifacts/report.html?")
            _shoot(profile, pane, args.out / "mlflow-decision-report.png")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
