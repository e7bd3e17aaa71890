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
