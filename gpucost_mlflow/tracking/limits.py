"""How much one MLflow write may hold, as the installed MLflow checks it (`mlflow.utils.validation`).

Kept apart from schema.py, which imports nothing: reading these limits imports MLflow.
"""

from __future__ import annotations

from mlflow.utils import validation

TAG_VALUE = validation.MAX_TAG_VAL_LENGTH
PARAM_VALUE = validation.MAX_PARAM_VAL_LENGTH
EXPERIMENT_TAG_VALUE = validation.MAX_EXPERIMENT_TAG_VAL_LENGTH
# Entities of each kind one log_batch may carry.
BATCH = {"metrics": validation.MAX_METRICS_PER_BATCH, "params": validation.MAX_PARAMS_TAGS_PER_BATCH,
         "tags": validation.MAX_PARAMS_TAGS_PER_BATCH}


def batches(items: list, kind: str):
    """The items in slices one log_batch takes (`kind`: metrics, params or tags)."""
    size = BATCH[kind]
    for start in range(0, len(items), size):
        yield items[start:start + size]


def together(params: list, tags: list, metrics: list):
    """Params, tags and metrics in as few log_batch calls as MLflow takes: each call within every kind's limit and
    MAX_ENTITIES_PER_BATCH in all; yields (params, tags, metrics) slices."""
    while params or tags or metrics:
        some_params, some_tags = params[:BATCH["params"]], tags[:BATCH["tags"]]
        room = min(BATCH["metrics"], validation.MAX_ENTITIES_PER_BATCH - len(some_params) - len(some_tags))
        some_metrics = metrics[:room]
        yield some_params, some_tags, some_metrics
        params, tags, metrics = params[len(some_params):], tags[len(some_tags):], metrics[len(some_metrics):]
