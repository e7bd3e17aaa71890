"""Where the MLflow UI shows an experiment's runs: the link a user can open as is, and the saved view it opens.

MLflow 3.17 opens an experiment on the GenAI or the model-training side by its "GenAI / Model training" switch, which a
link sets with `workflowType=machine_learning`; earlier MLflow 3 releases read the experiment tag
`mlflow.experimentKind` instead (tracking/experiments.py writes it). The runs table takes its sort and filter from the
URL but its shown columns only from a saved view: an experiment tag `mlflow.sharedViewState.<id>` holding the view,
opened by `viewStateShareKey=<id>`. gpucost's view lists the passes sorted by the steady lap (the one duration the
decision reads) with the columns that say what each one is worth, the standing's column wide enough for its longest
word; its Charts tab (`compareRunsMode=CHART`) opens on a section of the steady lap and inputs/s per pass before
MLflow's own charts; the confirmation runs' view shows each one's verdict, rate against the benchmark's slowest pass,
repetitions, agreement and flips. A tracking server is linked directly; a database or folder store needs `mlflow ui`
started on it first, so the line says how.
"""

from __future__ import annotations

import json
import os
import shlex
from urllib.parse import urlparse

from gpucost_mlflow.core.names import (
    FLIPS_GAINED,
    FLIPS_LOST,
    LABEL_AGREEMENT,
    PASS_S,
    RATE_VS_SLOWEST,
    REPETITIONS,
    STEADY_LAP,
    STEADY_LAP_S,
)
from gpucost_mlflow.tracking import schema
from gpucost_mlflow.tracking.spool import public_uri

LOCAL_UI = "http://127.0.0.1:5000"  # where `mlflow ui` serves a database or folder store by default
UI_URL = "GPUCOST_UI_URL"  # where you serve such a store's UI instead (`mlflow ui --port 5005`): links follow it
MODEL_TRAINING = "workflowType=machine_learning"  # the UI's model-training side, not the GenAI overview
# The saved views' ids: a new id when a definition changes, so experiments get the new one at their next lock. The
# passes view shows benchmark passes only; confirmation and deliverable runs have views of their own.
PASSES_VIEW = "gpucost-passes-5"
PASSES_VIEW_NAME = f"gpucost: passes by {STEADY_LAP}"
CONFIRMATIONS_VIEW = "gpucost-confirmations-2"
DELIVERABLES_VIEW = "gpucost-deliverables-2"
VIEWS = {PASSES_VIEW: (PASSES_VIEW_NAME, "benchmark"),
         CONFIRMATIONS_VIEW: ("gpucost: confirmation runs", "confirmation"),
         DELIVERABLES_VIEW: ("gpucost: deliverable runs", "deliverable")}
CURRENCY = "usd"  # the committed column's unit until a decision in another currency names its own


def _column(kind: str, key: str) -> str:
    """A runs-table column as MLflow's UI names it: metrics.`steady_lap_s`, tags.`gpucost.status`."""
    return f"{kind}.`{key}`"


STANDING_WIDTH_PX = 200  # "slower at the same cost", the longest standing word (report/standing.py), uncut
VERDICT_WIDTH_PX = 160  # "not yet confirmed", the longest confirmation verdict, uncut
CHARTS_SECTION = "gpucost"
SECTION_NAME = f"{STEADY_LAP}, inputs/s"  # short: MLflow cuts a section name at about 20 characters
# The one duration the decision reads and its rate (inputs per second at the steady lap), sorted and charted; a
# deliverable is delivered in one lap, so its view sorts by that lap, pass_s.
DURATION = {"benchmark": STEADY_LAP_S, "confirmation": STEADY_LAP_S, "deliverable": PASS_S}


def _charts(role: str = "benchmark") -> dict:
    """The Charts tab's first section: the steady lap and inputs/s, one bar per run; MLflow adds its own charts
    after it."""
    return {"compareRunSections": [{"uuid": CHARTS_SECTION, "name": SECTION_NAME,
                                    "display": True, "isReordered": False}],
            "compareRunCharts": [{"uuid": f"{CHARTS_SECTION}-{key}", "type": "BAR", "metricSectionId": CHARTS_SECTION,
                                  "deleted": False, "isGenerated": False, "metricKey": key}
                                 for key in (DURATION[role], schema.INPUTS_PER_S)],
            "isAccordionReordered": True}


# MLflow's own leading columns (the row's checkbox, its name, its start), kept first when the view orders the others.
LEADING_COLUMNS = ("0", "attributes.`Run Name`", "runDateAndNestInfo")


def _selected(currency: str = CURRENCY, role: str = "benchmark") -> list[str]:
    """The view's columns in the order shown. Passes: standing and committed cost (with its unit) first, then what
    each pass is; confirmation runs: the verdict, the rate against the benchmark's slowest pass, repetitions,
    agreement with the reference and the answers changed; deliverables: what each one is."""
    what = [_column("tags", schema.VARIANT), _column("tags", schema.STATUS), _column("metrics", schema.ACCEPTED),
            _column("metrics", DURATION[role]), _column("metrics", schema.INPUTS_PER_S)]
    if role == "confirmation":
        return [_column("tags", schema.CONFIRMATION), _column("metrics", RATE_VS_SLOWEST),
                _column("metrics", REPETITIONS), _column("metrics", LABEL_AGREEMENT), _column("metrics", FLIPS_LOST),
                _column("metrics", FLIPS_GAINED), *what]
    if role == "deliverable":
        return what
    return [_column("tags", schema.STANDING), _column("metrics", schema.in_currency(schema.PASS_COMMITTED, currency)),
            *what]


def passes_view_state(role: str = "benchmark", currency: str = CURRENCY) -> dict:
    """The view of one role's runs (benchmark passes by default: no confirmation, deliverable, campaign or decision
    run), fastest steady lap first, with the columns `_selected` gives; every run drawn in the charts, whose tab opens
    on the steady lap and inputs/s."""
    widths = {_column("tags", schema.STANDING): STANDING_WIDTH_PX,
              _column("tags", schema.CONFIRMATION): VERDICT_WIDTH_PX}
    return {
        "searchFilter": f"{_column('tags', schema.VARIANT)} LIKE '%' AND {_column('params', schema.ROLE)} = '{role}'",
        "orderByKey": _column("metrics", DURATION[role]),
        "orderByAsc": True,
        "selectedColumns": _selected(currency, role),
        # MLflow groups a view's columns by kind, in alphabetical order, unless the view orders them; a width applies
        # only to a column the order names.
        "columnOrder": [*LEADING_COLUMNS, *_selected(currency, role), "duration"],
        "columnWidths": {column: px for column, px in widths.items() if column in _selected(currency, role)},
        "runsHiddenMode": "SHOW_ALL",
        **_charts(role),
    }


def passes_view(created_ms: int, view: str = PASSES_VIEW, currency: str = CURRENCY) -> tuple[str, str]:
    """The experiment tag holding one of gpucost's views (key, value), in the envelope MLflow's saved views use."""
    name, role = VIEWS[view]
    value = json.dumps({"name": name, "createdAt": created_ms, "updatedAt": created_ms,
                        "state": json.dumps(passes_view_state(role, currency))})
    return f"{schema.SAVED_VIEW_PREFIX}{view}", value


def views(created_ms: int, currency: str = CURRENCY) -> dict[str, str]:
    """Every view gpucost keeps on an experiment: benchmark passes, confirmation runs, deliverable runs."""
    return dict(passes_view(created_ms, view, currency) for view in VIEWS)


def outdated(tags: dict, currency: str) -> list[str]:
    """gpucost's own views on an experiment whose committed column is not in this decision's currency (a view the
    user renamed is theirs and stands)."""
    found = []
    for view, (name, _) in VIEWS.items():
        text = tags.get(f"{schema.SAVED_VIEW_PREFIX}{view}", "")
        try:
            envelope = json.loads(text) if text else {}
        except ValueError:
            continue
        column = _column("metrics", schema.in_currency(schema.PASS_COMMITTED, currency))
        shows = any(schema.PASS_COMMITTED in selected for selected in _selected(currency, VIEWS[view][1]))
        if shows and envelope.get("name") == name and column not in envelope.get("state", ""):
            found.append(view)
    return found


def runs_path(experiment_id: str, view: bool = True) -> str:
    """The UI route of an experiment's runs table on the model-training side, in gpucost's saved view unless
    view is False (the experiment does not hold it)."""
    path = f"#/experiments/{experiment_id}/runs?{MODEL_TRAINING}"
    return f"{path}&viewStateShareKey={PASSES_VIEW}" if view else path


def run_path(experiment_id: str, run_id: str) -> str:
    """A run's page on the model-training side (its breadcrumb says Runs, not Evaluations)."""
    return f"#/experiments/{experiment_id}/runs/{run_id}?{MODEL_TRAINING}"


def root(tracking_uri: str) -> str:
    """The UI's address: the tracking server itself; for any other store, where its UI is served: `GPUCOST_UI_URL`
    when set, else where a local `mlflow ui` serves by default."""
    uri = public_uri(tracking_uri)
    if urlparse(uri).scheme in ("http", "https"):
        return uri.rstrip("/")
    served = os.environ.get(UI_URL, "").strip().rstrip("/")
    return served if urlparse(served).scheme in ("http", "https") else LOCAL_UI


def runs_url(tracking_uri: str, experiment_id: str, view: bool = True) -> str:
    """The runs table on the tracking server itself, or on a local `mlflow ui` for any other store."""
    return f"{root(tracking_uri)}/{runs_path(experiment_id, view)}"


def run_url(tracking_uri: str, experiment_id: str, run_id: str) -> str:
    """A run's page on the tracking server itself, or on the UI serving any other store (`root`)."""
    return f"{root(tracking_uri)}/{run_path(experiment_id, run_id)}"


def link_line(tracking_uri: str, experiment_id: str, view: bool = True) -> str:
    """One line for the terminal: the link, preceded by the `mlflow ui` command when the store is not a server."""
    uri = public_uri(tracking_uri)
    if urlparse(uri).scheme in ("http", "https"):
        return f"MLflow UI: {runs_url(uri, experiment_id, view)}"
    port = urlparse(root(uri)).port
    serve = f" --port {port}" if port and port != urlparse(LOCAL_UI).port else ""
    return (f"MLflow UI: run `mlflow ui --backend-store-uri {shlex.quote(uri)}{serve}`, then open "
            f"{runs_url(uri, experiment_id, view)}")
