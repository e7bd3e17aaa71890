"""A hosted API's batch tier as a pass (`gpucost hosted batch-file`, `batch-import`): the OpenAI Batch API input file
written for the corpus, then the provider's output judged and recorded as a pass of the variant, timed by how long the
batch took.

The kind's own `hosted` module (found through the registry: generation's today) builds the prompts a live pass through
`engine: openai` sends and turns the answers into the pass's outcome; the answers go through the same export, checks
and reference comparison as every pass. The results file is read whole before any run opens: a malformed one records
nothing.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.corpus import write_atomic
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.kinds.endpoint import remote_device
from gpucost_mlflow.flow import launcher
from gpucost_mlflow.flow.preparation import PassRequest, prepare

HOSTED = "hosted"  # the module of a kind's folder that asks a hosted batch tier


def _asked(request: PassRequest):
    """The batch's inputs as the variant's kind asks them; a variant that is not a hosted endpoint's, or a kind with
    no batch path, refused in one line before anything is recorded."""
    settings, name = request.variant.settings, request.variant.name
    endpoint = settings.endpoint
    if endpoint is None or endpoint.serve or not remote_device(endpoint):
        raise GpucostError(f"variant '{name}' is not on engine openai with a hosted endpoint.base_url: a batch tier "
                           "is a hosted API's")
    kind = registry.of_settings(settings)
    if importlib.util.find_spec(f"{kind.package}.{HOSTED}") is None:
        raise GpucostError(f"variant '{name}': workload {kind.name} has no hosted batch tier path")
    prepared = prepare(request)
    return kind.module(HOSTED).Asked(settings, prepared.manifest.workload, request.model_path,
                                     prepared.corpus.rows)


def batch_file(request: PassRequest, out: Path) -> int:
    """Write the Batch API input file for the corpus; the number of requests in it."""
    lines = _asked(request).lines()
    write_atomic(out, "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8"))
    return len(lines)


def import_batch(request: PassRequest, results: Path, completed_in_h: float) -> launcher.PassResult:
    """Judge and record the provider's output as a pass of the variant: pass_s is how long the batch took, the
    tokens its usage, an input it did not answer a missing output (coverage counts it)."""
    if not completed_in_h > 0:
        raise GpucostError(f"--completed-in {completed_in_h:g}: the hours the batch took, > 0")
    asked = _asked(request)
    returned = asked.read(results)
    if not returned.answers:
        raise GpucostError(f"{results}: no answered input (every line an error): nothing to judge")
    return launcher.execute(PassRequest(**{**request.__dict__, "imported": asked.outcome(returned, completed_in_h)}))
