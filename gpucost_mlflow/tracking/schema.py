"""The MLflow names gpucost writes and reads: one module owns them (see DESIGN.md, MLflow schema)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping

from gpucost_mlflow.core import names
from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.manifest import Manifest, Warmup
from gpucost_mlflow.core.judging import verdicts
from gpucost_mlflow.core.kinds.endpoint import Endpoint
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.measurement import energy

# The pass metrics are named in core/names.py (the child imports them there); they are read here as well.
from gpucost_mlflow.core.names import INPUTS_PER_S, MEASURED_SPAN, TIMINGS, TOKENS_PER_S, UTILISATION  # noqa: F401

# The names made at run time (a candidate's metric part, a money metric's currency, the attention kernel's params).
from gpucost_mlflow.tracking.run_names import (  # noqa: F401
    SDPA_PREFIX,
    in_currency,
    metric_parts,
    observed_stack_params,
)

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
# A fleet (`gpucost fleet launch`, docs/fleet.md): its own run, and its id, GPU type and SkyPilot job id on each
# campaign run and pass run of its jobs, so one filter finds a fleet's passes.
FLEET_ROLE = "fleet"
# A delivery (`gpucost deliver`): the parent run of one deliverable pass per corpus, its children's count and per_child.
DELIVERY_ROLE = "delivery"
FLEET_ID = "gpucost.fleet.id"
FLEET_GPU = "gpucost.fleet.gpu"
FLEET_JOB = "gpucost.fleet.job_id"
FLEET_PREFIX = "gpucost.fleet."  # the fleet run's per-GPU tags: gpucost.fleet.<GPU>.<fact>
# A delivery fleet's deliverable: its key (its corpus's fingerprint and the decision it serves) and corpus file.
DELIVERY_KEY = "gpucost.delivery.key"
DELIVERY_CORPUS = "gpucost.delivery.corpus"
DELIVERY_OUTPUTS = "gpucost.delivery.outputs"  # its outputs' folder in the fleet's bucket, never the tracking store
# On the decision run a delivery fleet served (`bill --fleet`): its forecast held against what it realized, the line
# the next card gives, and the fleet; beside the metrics delivery_cost_ratio and delivery_window_ratio.
DELIVERY_HELD = "gpucost.delivery.held"
DELIVERY_FLEET = "gpucost.delivery.fleet"
# On the fleet run, per GPU type, once its job has ended: what its attempts really rented (core/fleet/realized.py),
# the metric realized_<gpu>_<currency> (realized_a10g_usd) beside the tags gpucost.fleet.<GPU>.realized[_line].
REALIZED = "realized"
LAUNCHER = "gpucost.launcher"
HOST = "gpucost.host"
# A running pass's sign of life (tracking/heartbeat.py): the UTC time to the second, rewritten by its launcher at a
# fixed interval, and that interval in seconds, written once at start so a reader judges by the writer's interval.
HEARTBEAT = "gpucost.heartbeat"
HEARTBEAT_INTERVAL = "gpucost.heartbeat_interval_s"
SYSTEM_METRICS_INTERVAL = "gpucost.system_metrics_interval_s"  # MLflow's system/... metrics sampled at this interval
HARNESS_OVERHEAD = "harness_overhead_s_per_pass"  # campaign metric: wall time outside the timed parts, per pass
# The price of measuring (core/campaign/measuring.py): a campaign's machine time in hours over its sessions, rewritten
# as each ends: its wall, its passes' walls, its harness (the wall outside the passes' timed parts, idle included) and
# its idle time (in no pass); the decision run records its campaigns' measuring_h.
MEASURING_HOURS = "measuring_h"
MEASURING_PASSES_HOURS = "measuring_passes_h"
MEASURING_HARNESS_HOURS = "measuring_harness_h"
MEASURING_IDLE_HOURS = "measuring_idle_h"
MEASURING_METRICS = {"wall": MEASURING_HOURS, "passes": MEASURING_PASSES_HOURS, "harness": MEASURING_HARNESS_HOURS,
                     "idle": MEASURING_IDLE_HOURS}
# Its cost under an offer's terms (core/money/measuring_price.py), in the offer's currency (`in_currency`:
# measuring_cost_usd): on a campaign run given --catalog, and on the decision run at the committed plan's offer; the
# words (what priced it, or why nothing did) in the tag gpucost.measuring.priced on either.
MEASURING_COST = "measuring_cost"
MEASURING_PRICED = "gpucost.measuring.priced"
# on a campaign run: variants of a sweep skipped after a smaller batch ran out of memory
NOT_TRIED = "gpucost.not_tried"
STAGE = "gpucost.stage"  # "settle" on a pre-registered second stage's campaign run and passes (core/campaign/settle.py)
# On a second stage's campaign run and passes: the stage fixed once over every device of the undecided group
# (core/campaign/settle.py `StagePlan.record`), so the report knows which device has not reported yet.
SETTLE_PLAN = "gpucost.settle.plan"
# On the last pass of a configuration the protocol's race stopped (core/campaign/race.py): why, in one line (the
# attempts table's `stopped` column, on every row of that configuration in its campaign); on the campaign run, every
# stop it made ("variant: why; ...").
RACE_STOPPED = "gpucost.race.stopped"
CORPUS_LOCK = "gpucost.corpus_lock"  # experiment tag: the corpus fingerprint of its first benchmark pass
SERIES_LOCK_PREFIX = "gpucost.series."  # experiment tag per series: the digest of its declaration at its first pass
OVERLAPPED_WITH = "gpucost.overlapped_with"
CONTENDED = "gpucost.contended"  # other processes' load during the measured pass, above the protocol's limit
THROTTLED = "gpucost.throttled"  # the board's throttle reasons at the start or end of the measured pass
STARVED = "gpucost.starved"  # the pass's device busy less than the protocol's min_utilisation while measured
COLD_SHAPES = "gpucost.cold_shapes"  # its first lap above 1.5 steady laps: each new shape's setup, the ratio and why
NOTE = "mlflow.note.content"  # a run's or an experiment's markdown description in the MLflow UI
# The experiment's kind as MLflow's experiment-kind selector reads and writes it: model development, not GenAI.
EXPERIMENT_KIND = "mlflow.experimentKind"
MODEL_DEVELOPMENT = "custom_model_development"
# an experiment tag per saved runs-table view, opened by viewStateShareKey
SAVED_VIEW_PREFIX = "mlflow.sharedViewState."
RUN_NAME = "mlflow.runName"
PARENT_RUN_ID = "mlflow.parentRunId"  # nests a pass under its campaign run
DATASET_CONTEXT_TAG = "mlflow.data.context"  # input tag of the run's dataset; its value is DATASET_CONTEXT
SPOOL_ID = "gpucost.spool_id"  # a pass published from the spool: finds the run an earlier sync made
LOGGED_ARTIFACTS = "mlflow.loggedArtifacts"  # what mlflow.log_table records: the UI shows these files as tables
MAIN_METRIC = "gpucost.main_metric"  # the protocol's main metric, named on the pass so its description can show it
# the file the pass exported for its verdict (its output's FILE: workloads/<kind>/output.py)
EXPORTED = "gpucost.exported"
MISSING_PREFIX = "gpucost.missing."  # a measurement absent from a pass: gpucost.missing.<metric> = short reason
# Pass metric a user can filter on: 1/0 for the verdict (updated when it changes).
ACCEPTED = "accepted"
# Campaign params: the variants in the first round's order and the passes per variant (what resume reads).
CAMPAIGN_VARIANTS = "campaign.variants"
CAMPAIGN_PASSES = "campaign.passes"
# Campaign metrics, logged as passes finish (step: passes finished so far).
MEDIAN_STEADY_LAP_PREFIX = "median_steady_lap_s."  # the median steady lap per variant
PASSES_FINISHED = "passes_finished"
PASSES_ACCEPTED = "passes_accepted"
# The decision run: decided / none, the chosen configuration, and the campaigns whose passes it read.
DECISION_ROLE = "decision"
DECISION = "gpucost.decision"
DECISION_VARIANT = "gpucost.decision.variant"
DECISION_DEVICE = "gpucost.decision.device"
DECISION_CURRENCY = "gpucost.decision.currency"
DECISION_CAMPAIGNS = "gpucost.decision.campaigns"
# An undecided decision still answers on one device (core/money/choice.py `doubt`): the device its Rent line rents,
# the offer of that plan, and the configuration its Run line runs there.
DECISION_RENT_DEVICE = "gpucost.decision.rent_device"
DECISION_RENT_OFFER = "gpucost.decision.rent_offer"
DECISION_RUN = "gpucost.decision.run"
# A decision whose cost other devices equal (core/money/choice.py `Choice.equal`): it rents one device, and names each
# other device's configuration with its own plan here.
DECISION_EQUAL = "gpucost.decision.equal"
DECIDED = "decided"  # gpucost.decision when a plan was chosen ("none" when nothing was)
# Whether the decision held on its confirmation run, with how many of a tie (report/confirmed.py): `confirmed`,
# `not yet confirmed`, `not confirmed`, then `: 1 of 3 tied, <the one to run>`; its run name says it too.
DECISION_CONFIRMATION = "gpucost.decision.confirmation"
# A decision priced with example prices or made under a what-if protocol (its name ends in `· what-if`): it never
# supersedes a decision on a provider catalog (tracking/decision_run.py `supersede`).
DECISION_WHAT_IF = "gpucost.decision.what_if"
WHAT_IF = "what-if"  # ends the name of such a decision: `· what-if`, `· what-if protocol`
# Decision-run metrics carry their unit in the name: a money metric ends in the plan's currency code
# (`in_currency`: committed_cost_usd), hours in _h; tracking/decision_run.py rounds them as the UI shows them.
COMMITTED_COST = "committed_cost"  # alone (no currency) on decision runs logged before the unit was named
# Decision-run metrics beside the committed cost: the chosen plan's unit costs and its spare deliverables.
# Unit costs from the planned volume are forecasts, named so (issue 52): never a cost per validated result.
COST_PER_MILLION_INPUTS = "forecast_cost_per_million_planned_inputs"  # one unit (issue 66); older runs: per_1000
COST_PER_MILLION_OUTPUT_TOKENS = "forecast_cost_per_million_planned_output_tokens"
SPARE_DELIVERABLES = "spare_deliverables"
FORECAST_HOURS = "forecast_h"  # the median-pass window
FORECAST_HOURS_SLOWEST = "forecast_slowest_h"  # the slowest-pass window: what the committed plan covers
# On a pass: its configuration's committed cost in the latest decision, in that decision's currency (the passes view
# shows it beside the standing; one decision in one currency, so the view names one key).
PASS_COMMITTED = "committed"
IN_DOUBT = "in_doubt"  # an undecided decision: the money that depends on which candidate is really faster
CANDIDATES = "candidates"  # how many configurations the decision chose among (chosen, tied or undecided)
POSSIBLE_SAVING = "possible_saving"  # committed cost minus the median-pass plan's, when that one is cheaper
STANDING = "gpucost.standing"  # on a pass: its configuration's place in the latest decision (chosen, runner-up, ...)
SUPERSEDED_BY = "gpucost.superseded_by"  # on an older decision run: the id of the decision run logged after it
# The bill (`gpucost bill`): what was paid for the chosen plan, on the decision run it was chosen on; a second bill
# replaces these and the run's description keeps every bill (tracking/decision_run.py); `paid_<currency>` charts it.
BILL_PAID = "gpucost.bill.paid"  # a decimal string, to the cent
BILL_CURRENCY = "gpucost.bill.currency"
BILL_NOTE = "gpucost.bill.note"
BILL_AT = "gpucost.bill.at"  # UTC, to the minute: 2026-12-01T10:00Z
PAID = "paid"  # in the plan's currency: paid_usd
# Params of the decision run: the catalog (version and file), the deadline and the experiment it read.
DECISION_CATALOG = "catalog"
DECISION_DEADLINE = "deadline"  # a date-time, or the rule of a deadline after a start at the report ('96 h after ...')
DECISION_READ_AT = "deadline_read_at"  # with such a rule: the moment the report was read, to the minute
DECISION_EXPERIMENT = "experiment"
# The verdict's checks in one short tag (core/judging/verdicts.summary): `failed: quality · passed: ids, format`;
# each check's reason is in verdict.json. Passes recorded before it carry one `gpucost.check.<name>` tag per check.
CHECKS = "gpucost.checks"
CHECK_PREFIX = "gpucost.check."
# A verdict made again later (`gpucost rejudge`): one tag saying when, against which reference run, and what it was
# first; passes re-judged before it carry the three tags after it.
REJUDGED = "gpucost.rejudged"
REJUDGED_AT = "gpucost.rejudged_at"
REJUDGED_AGAINST = "gpucost.rejudged_against"
FIRST_STATUS = "gpucost.first_status"
# A pass excluded for a documented external cause (`gpucost exclude`, PROTOCOL.md §6): one JSON tag of its reason and
# note (core/judging/exclusion_reasons.py), the cause line they make, who, when (UTC), and the status and reason before,
# which `--undo` restores (leaving one trace). Passes excluded before it carry the six tags after it (exclusions.py).
EXCLUSION = "gpucost.exclusion"
EXCLUDED_CAUSE = "gpucost.excluded_cause"
EXCLUDED_BY = "gpucost.excluded_by"
EXCLUDED_AT = "gpucost.excluded_at"
STATUS_BEFORE_EXCLUSION = "gpucost.status_before_exclusion"
REASON_BEFORE_EXCLUSION = "gpucost.reason_before_exclusion"
EXCLUSION_UNDONE = "gpucost.exclusion_undone"

# A pass's role: a timed comparison pass, a production corpus, or the chosen configuration's confirmation run
# (`gpucost confirm`: a disjoint corpus, the clock repeated for the protocol's confirmation.min_s).
CONFIRMATION_ROLE = "confirmation"
# On a confirmation run: its verdict in the latest decision (confirmed, not confirmed, not yet confirmed, excluded,
# not counted), written by `gpucost report`; the reference's outputs run `gpucost confirm` starts carries
# REFERENCE_OUTPUTS from its start, and its name says so: it is compared against, never counted.
CONFIRMATION = "gpucost.confirmation"
REFERENCE_OUTPUTS = "reference outputs"
DELIVERABLE_ROLE = "deliverable"
ROLES = ("benchmark", DELIVERABLE_ROLE, CONFIRMATION_ROLE)

# What a pass records once and never changes (where and how it ran, what it could not measure) is logged as params,
# under these same keys: the run page lists them in its Parameters table, and its tag chips keep to what changes or
# is filtered on (variant, status, reason, quality verdict, checks, standing, overlap, re-judging, exclusion).
# Passes recorded before this carry them as tags: `facts` reads either.
FACTS = frozenset({
    ROLE, CAMPAIGN_ID, PASS_INDEX, DEVICE_NAME, BACKEND, PROTOCOL_DIGEST, CORPUS_FINGERPRINT, MEMORY_COUNTER,
    ROUND, POSITION, SLOT, ATTEMPT, RETRY_OF, CACHE_POLICY, LAUNCHER, HOST, HEARTBEAT_INTERVAL,
    SYSTEM_METRICS_INTERVAL, SPOOL_ID, MAIN_METRIC, EXPORTED, CONTENDED, THROTTLED, STARVED,
    energy.ENERGY_COUNTER_TAG, energy.ENERGY_FLAG_TAG, energy.DEVICE_UUID_TAG, names.ENDPOINT_TAG,
    names.ENDPOINT_FAILED_TAG,
})
FACT_PREFIXES = (MISSING_PREFIX, SDPA_PREFIX)
# Tags no longer written: the status says whether the corpus was accepted, the checks tag whether the ids matched.
RETIRED = frozenset({CORPUS_ACCEPTED, IDS_MATCH})


@functools.lru_cache(maxsize=4096)
def is_fact(key: str) -> bool:
    """Whether a pass's key is one of its facts (logged as a param); asked for every key of thousands of runs that
    share a few dozen keys, so each answer is kept."""
    return key in FACTS or key.startswith(FACT_PREFIXES)


def split_facts(tags: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A pass's tags parted into (tags, facts): the facts are logged as params (see FACTS)."""
    kept = {key: value for key, value in tags.items() if not is_fact(key)}
    return kept, {key: value for key, value in tags.items() if is_fact(key)}


def facts(tags: dict[str, str], params: dict[str, str]) -> dict[str, str]:
    """A pass's tags with its facts, wherever they were logged (params now, tags on passes recorded before)."""
    return {**tags, **{key: value for key, value in params.items() if is_fact(key)}}


def run_facts(run) -> dict[str, str]:
    """`facts` of an MLflow Run."""
    return facts(dict(run.data.tags), dict(run.data.params))


MANIFEST = "manifest.json"
PREDICTIONS = verdicts.PREDICTIONS
VERDICT = "verdict.json"
ENVIRONMENT = "environment.txt"
ERROR = "error.txt"
PREVIEW = "predictions_preview.json"  # failed predictions first, then a sample: the UI renders it as a table
COST_VOLUME_FIGURE = "cost-volume.png"  # on a decision run: committed cost against volume (report/plots.py)
DURATIONS_FIGURE = "durations.png"  # on a decision run: every pass's duration per configuration
MEMORY_FIGURE = "memory.png"  # on a decision run: peak memory per configuration and counter

# Pass params (params_from_manifest): `setting.<key>`, `seed.<key>`, `stack.<key>`; the stack is part of the
# configuration (PROTOCOL.md §2): passes before and after an upgrade of torch, transformers or the engine never pool.
STACK_IDENTITY = ("torch_build", "cuda_runtime", "hip_runtime", "driver", "torch_version", "transformers_version",
                  "engine_version")
STACK_RECORDED = ("gpucost_version",)  # recorded on every pass, not part of the configuration
SETTING_PREFIX = "setting."
ENDPOINT = names.ENDPOINT_TAG  # an endpoint pass's host, served model and server version (its configuration's identity)
ENDPOINT_FAILED = names.ENDPOINT_FAILED_TAG
SEED_PREFIX = "seed."
SEED_TORCH = f"{SEED_PREFIX}torch"  # the seed a pass ran with (the protocol's seeds; 0 without them)
STACK_PREFIX = "stack."
MODEL_REVISION = "model.revision"
TOKENIZER_REVISION = "model.tokenizer_revision"
CORPUS_ORDER_DIGEST = "corpus.order_digest"
WARMUP = {"inputs": "warmup.inputs", "passes": "warmup.passes"}  # the warm-up's params by its record's field
DATASET_CONTEXT = "comparison"
# MLflow's own default experiment: where `mlflow run` puts a run without --experiment-name, and so gpucost's default.
DEFAULT_EXPERIMENT = "Default"


def params_from_manifest(manifest: Manifest) -> dict[str, str]:
    """The manifest's MLflow params: every variant setting, model and tokenizer revision, corpus order, warm-up,
    seeds, the stack's identity (strings, as MLflow stores them)."""
    settings = manifest.settings.record()
    params = {f"{SETTING_PREFIX}{key}": str(value) for key, value in settings.items() if not isinstance(value, dict)}
    params.update({f"{SETTING_PREFIX}{key}.{field}": str(inner) for key, value in settings.items()
                   if isinstance(value, dict) for field, inner in value.items()})  # setting.endpoint.base_url, ...
    params.update({MODEL_REVISION: manifest.model.revision, TOKENIZER_REVISION: manifest.model.tokenizer_revision,
                   CORPUS_ORDER_DIGEST: manifest.corpus.order_digest,
                   **{key: str(getattr(manifest.warmup, name)) for name, key in WARMUP.items()}})
    params.update({f"{SEED_PREFIX}{key}": str(value) for key, value in manifest.seeds.record().items()})
    params.update({f"{STACK_PREFIX}{key}": str(manifest.stack.get(key, "")) for key in STACK_IDENTITY + STACK_RECORDED})
    return params


def settings_from_params(params: Mapping[str, str], record: type[Settings] = Settings) -> Settings | None:
    """The inverse of `params_from_manifest` for a pass's settings, read back by the kind's record's `from_record`;
    None where they hold part of a record (a pass recorded before every setting was a param: `settings_record`)."""
    try:
        return record.from_record(settings_record(params, record))
    except (TypeError, ValueError, GpucostError):
        return None


def warmup_from_params(params: Mapping[str, str]) -> Warmup:
    """The inverse of `params_from_manifest` for the warm-up: its params read back by the manifest's own record
    (`Warmup.from_record`), each a whole number; a field not recorded stays None."""
    return _warmup(*(params.get(key) for key in WARMUP.values()))


@functools.lru_cache(maxsize=256)
def _warmup(*texts: str | None) -> Warmup:  # thousands of passes share a few warm-ups (frozen, so shared)
    return Warmup.from_record({name: _typed("int", text) for name, text in zip(WARMUP, texts) if text is not None})


def settings_record(params: Mapping[str, str], record: type[Settings] = Settings) -> dict[str, object]:
    """The settings' recorded form (`Settings.record()`) back from the params, each value as its field's type (an
    endpoint's fields from `setting.endpoint.<field>`); a value its type cannot read stays the text it was."""
    found: dict[str, object] = {}
    for key, value in params.items():
        if key.startswith(SETTING_PREFIX):
            name, _, inner = key[len(SETTING_PREFIX):].partition(".")
            if inner:
                found.setdefault(name, {})[inner] = _typed(_field_types(Endpoint).get(inner, "str"), value)
            else:
                found[name] = _typed(_field_types(record).get(name, "str"), value)
    return found


@functools.lru_cache(maxsize=64)
def _field_types(record: type) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(record)}


READERS = {"int": int, "float": float, "bool": {"True": True, "False": False}.__getitem__}  # as str() wrote them


def _typed(kind: str, text: str) -> object:
    """A param's text as its field's type (`str(value)` wrote it): int, float, bool; else, or unreadable, the text."""
    try:
        return READERS.get(kind, str)(text)
    except (ValueError, KeyError):
        return text
