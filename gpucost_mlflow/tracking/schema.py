"""The MLflow names gpucost writes and reads: one module owns them (see DESIGN.md, MLflow schema)."""

from __future__ import annotations

TAG_PREFIX = "gpucost."
ROLE = "gpucost.role"
VARIANT = "gpucost.variant"
CAMPAIGN_ID = "gpucost.campaign_id"
PASS_INDEX = "gpucost.pass_index"
STATUS = "gpucost.status"
STATUS_REASON = "gpucost.status_reason"
DEVICE_NAME = "gpucost.device_name"
BACKEND = "gpucost.backend"
PROTOCOL_DIGEST = "gpucost.protocol_digest"
CORPUS_FINGERPRINT = "gpucost.corpus_fingerprint"
CORPUS_ACCEPTED = "gpucost.corpus_accepted"
MEMORY_COUNTER = "gpucost.memory_counter"
IDS_MATCH = "gpucost.ids_match"
PROTOCOL_PATH = "gpucost.protocol_path"
PROTOCOL_TEXT = "gpucost.protocol_text"
QUALITY_VERDICT = "gpucost.quality_verdict"
ROUND = "gpucost.round"
POSITION = "gpucost.position"
SLOT = "gpucost.slot"
ATTEMPT = "gpucost.attempt"
RETRY_OF = "gpucost.retry_of"
CACHE_POLICY = "gpucost.cache_policy"
CAMPAIGN_ROLE = "campaign"
LAUNCHER = "gpucost.launcher"
CHECK_PREFIX = "gpucost.check."
# A verdict made again later (`gpucost rejudge`): when, against which reference run, and what it was first.
REJUDGED_AT = "gpucost.rejudged_at"
REJUDGED_AGAINST = "gpucost.rejudged_against"
FIRST_STATUS = "gpucost.first_status"

ROLES = ("benchmark", "deliverable")
STATUSES = ("accepted", "rejected", "failed", "excluded", "pending")
DEFAULT_PROTOCOL = "projects/protocol.yaml"

TIMINGS = ("load_s", "warmup_s", "pass_s", "eval_s", "export_s")
ID_METRICS = ("expected_ids", "observed_ids", "completed_entries")
# FLOPs of the pass's forward passes (core/flops.py) per second of pass_s; mfu_* as fractions of the
# device's cached dense-matmul peak at the pass's precision (absent, with a reason, when none is cached).
UTILISATION = ("useful_flop_per_s", "padded_flop_per_s", "mfu_useful", "mfu_padded", "padding_share", "peak_flop_per_s")

MANIFEST = "manifest.json"
PREDICTIONS = "predictions.jsonl.gz"
VERDICT = "verdict.json"
ENVIRONMENT = "environment.txt"
ERROR = "error.txt"

DATASET_CONTEXT = "comparison"
DEFAULT_EXPERIMENT = "gpucost"


def params_from_manifest(manifest: dict) -> dict[str, str]:
    """Params: every variant setting, model and tokenizer revision, seeds (strings, as MLflow stores them)."""
    params = {f"setting.{key}": str(value) for key, value in manifest["settings"].items()}
    params.update(
        {
            "model.revision": manifest["model"]["revision"],
            "model.tokenizer_revision": manifest["model"]["tokenizer_revision"],
            "corpus.order_digest": manifest["corpus"]["order_digest"],
            "warmup.inputs": str(manifest["warmup"]["inputs"]),
            "warmup.passes": str(manifest["warmup"]["passes"]),
        }
    )
    params.update({f"seed.{key}": str(value) for key, value in manifest["seeds"].items()})
    return params
