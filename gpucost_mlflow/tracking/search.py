"""Every run a search matches, page after page: the one `search_runs` pager of the reader, campaigns and exclusions."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from mlflow.entities import Run, ViewType
from mlflow.store.tracking import SEARCH_MAX_RESULTS_DEFAULT
from mlflow.tracking import MlflowClient

OLDEST_FIRST = ("attributes.start_time ASC",)


def all_runs(client: MlflowClient, experiment_id: str, filter_string: str,
             order_by: Sequence[str] | None = OLDEST_FIRST) -> Iterator[Run]:
    """The experiment's active runs matching filter_string, in order_by's order (None: the store's own), every page."""
    token = None
    while True:
        page = client.search_runs([experiment_id], filter_string=filter_string, run_view_type=ViewType.ACTIVE_ONLY,
                                  max_results=SEARCH_MAX_RESULTS_DEFAULT,
                                  order_by=list(order_by) if order_by else None, page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def _fact_filters(key: str, value: str, also: str) -> list[str]:
    """The filters for a fact's value in either layout: as a param (passes recorded now), as a tag (before)."""
    quoted = value.replace("'", "\\'")
    return [f"{kind}.`{key}` = '{quoted}'" + (f" AND {also}" if also else "") for kind in ("params", "tags")]


def by_fact(client: MlflowClient, experiment_id: str, key: str, value: str, also: str = "") -> list[Run]:
    """The experiment's active runs whose fact `key` (tracking/schema.FACTS) is `value`, oldest first: a param on a
    pass recorded now, a tag on one recorded before; `also` adds a condition (MLflow's filter syntax)."""
    found: dict[str, Run] = {}
    for condition in _fact_filters(key, value, also):
        for run in all_runs(client, experiment_id, condition, order_by=None):
            found.setdefault(run.info.run_id, run)
    return sorted(found.values(), key=lambda run: (run.info.start_time is None, run.info.start_time or 0,
                                                   run.info.run_id))


def newest_by_fact(client: MlflowClient, experiment_id: str, key: str, value: str, also: str = "") -> Run | None:
    """The newest active run whose fact `key` is `value` (as `by_fact`), asking each layout for one row only: the
    reference a pass is judged against is looked up before every pass, among however many earlier ones."""
    found = []
    for condition in _fact_filters(key, value, also):
        found += client.search_runs([experiment_id], filter_string=condition, run_view_type=ViewType.ACTIVE_ONLY,
                                    order_by=["attributes.start_time DESC"], max_results=1)
    return max(found, key=lambda run: (run.info.start_time or 0, run.info.run_id), default=None)
