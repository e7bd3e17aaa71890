"""`gpucost fleet plan`: which offers of the catalogs are worth measuring, from the configurations measured so far on
any device (docs/fleet.md, "Which offers are worth measuring"). The store, the variants file and the model folder are
read here; the bound, the memory fit and the verdict are core/fleet/plan.py's. Nothing of it enters a decision."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import click

from gpucost_mlflow.cli.options import (
    AUTO_MODEL,
    EXPERIMENT_HELP,
    _catalog,
    _experiment,
    _file,
    _model,
    _under,
)
from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.fleet import budget, devices
from gpucost_mlflow.core.fleet import plan as rules
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.protocol_diff import against_lock
from gpucost_mlflow.core.inputs.variants import Declaration, read_declaration
from gpucost_mlflow.core.judging.status import Status
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.money.catalog import dated
from gpucost_mlflow.core.money.market import load_device_names
from gpucost_mlflow.core.money.plans import parse_positive
from gpucost_mlflow.core.names import PASS_S, USEFUL_FLOP_PER_S
from gpucost_mlflow.workloads.encoder_memory import estimate, safetensors_parameters


def _encoder(workload: str) -> bool:
    """Whether the workload's kind declares a BERT-style encoder, whose memory workloads/encoder_memory.py estimates."""
    try:
        return registry.of_workload(workload).encoder_memory
    except KeyError:  # a workload recorded by a kind no longer installed
        return False


# a GPU pass's peaks (attempts_table.COLUMNS), largest first
GPU_MEMORY = ("mem_peak_reserved_bytes", "mem_peak_allocated_bytes")


@click.command("plan")
@click.option("--experiment", default=None, help=EXPERIMENT_HELP)
@click.option("--catalog", "catalog_file", type=click.Path(path_type=Path), multiple=True,
              help="A price catalog (default: the shipped lab kit); repeat it to read several as one (one currency).")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True, help="The protocol locked on the experiment: its volume and setup hours.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--model", "model_path", type=click.Path(path_type=Path), default=AUTO_MODEL, show_default=True,
              help="The model folder a CPU-measured encoder's memory is estimated from (`gpucost memory estimate`).")
@click.option("--device-table", "device_tables", type=click.Path(path_type=Path), multiple=True,
              help="Your own device rows (the shipped table's columns); a row for the same accelerator and memory "
                   "replaces the shipped one.")
@click.option("--max-hours", default="2", show_default=True,
              help="The launch line's --max-hours: each job's campaign limit, in hours.")
@click.option("--setup-hours", default="0.5", show_default=True, help="The launch line's --setup-hours.")
@click.option("--max-cost", default=None,
              help="The fleet's budget in USD the worst case is checked against (default: the worst case, rounded up).")
@click.option("--allow-stale-prices", is_flag=True, help="Use catalog rows older than max_price_age_days anyway.")
@click.option("--root", type=click.Path(path_type=Path, file_okay=False), default=Path("."))
def plan_cmd(experiment, catalog_file, protocol_file, variants_file, model_path, device_tables, max_hours, setup_hours,
             max_cost, allow_stale_prices, root) -> None:
    """Which offers are worth measuring: per device of the catalogs no pass ran on, a lower bound, the memory fit and
    a verdict, then the `gpucost fleet launch` line for those worth it. Never a decision."""
    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    name = _experiment(experiment)
    protocol_path = _file(protocol_file, root)
    protocol = load_protocol(protocol_path)
    declared = read_declaration(_file(variants_file, root))
    catalog = _catalog(tuple(_under(root, path) for path in catalog_file))
    tables = devices.Tables(devices.load_device_specs([shipped.shipped(shipped.DEVICE_SPECS), *device_tables]),
                          load_device_names([shipped.shipped(shipped.DEVICE_NAMES)]))
    variants = None if variants_file == shipped.VARIANTS else str(variants_file)
    limits = rules.Launch(name, "", str(protocol_file), variants,
                          parse_positive(max_hours, "--max-hours"), parse_positive(setup_hours, "--setup-hours"),
                          parse_positive(max_cost, "--max-cost", "an amount") if max_cost is not None else None)
    built = _report(name, protocol, protocol_path, catalog, declared, allow_stale_prices)
    model_dir = _model(root, model_path, protocol_path)
    candidates = [found for a in built.assessments
                  if (found := _candidate(a, built.measured, declared, model_dir)) is not None]
    setup = Decimal(str(protocol.plan.setup_hours if protocol.plan else 0)).normalize()
    basis = rules.basis(candidates, protocol.deliverables.expected, setup)
    fresh, _ = dated(catalog, dt.datetime.now(dt.timezone.utc).date(), protocol.max_price_age_days, allow_stale_prices)
    lines = rules.plan_offers(basis, fresh, {a.configuration.device for a in built.assessments}, tables)
    click.echo(f"Plan for experiment '{name}' over catalog {catalog.version}, device table "
               f"{', '.join(sorted({s.table for s in tables.specs}))}: which offers are worth measuring.")
    click.echo(f"Carried: {basis.measured.name} ({basis.measured.precision}); {basis.deliverables:,} expected "
               f"deliverable{'s' if basis.deliverables != 1 else ''}, {setup:f} h setup (the protocol's plan).")
    for note in basis.notes:
        click.echo(f"Note: {note}.")
    click.echo(basis.best.line() if basis.best else
               "Best committed cost measured so far: none (no feasible configuration is priced in these catalogs).")
    if len(fresh.packages) < len(catalog.packages):
        click.echo(f"{len(catalog.packages) - len(fresh.packages)} catalog row(s) older than max_price_age_days set "
                   "aside (--allow-stale-prices uses them).")
    if not lines:
        click.echo("Every device of these catalogs has been measured: `gpucost report` decides over them.")
    for line in lines:
        click.echo(line.text())
    limits = replace(limits, variant=basis.measured.variant,
                     design=budget.Design(1, protocol.passes_per_variant, protocol.race_from_round))
    for line in rules.launch_lines(lines, limits, basis.measured.gpus):
        click.echo(line)
    click.echo(rules.NEVER_DECIDES)


def _report(name, protocol, protocol_path: Path, catalog, declared: Declaration, allow_stale: bool):
    """The report's own assessment of the store (no pending pass is judged, nothing is written), under the protocol
    locked on the experiment."""
    from gpucost_mlflow.report.build import Options, build  # deferred: imports matplotlib
    from gpucost_mlflow.tracking import evidence, experiments, schema, store  # deferred: imports mlflow

    store.bound_http_retries()
    client = store.client()
    found = experiments.named(client, name)
    against_lock(protocol_path, protocol.digest, protocol_path.read_text(encoding="utf-8"), name,
                 found.tags.get(schema.PROTOCOL_DIGEST, ""), found.tags.get(schema.PROTOCOL_TEXT, ""), what_if=False)
    built, _ = build(evidence.read(client, found), protocol, protocol_path, catalog, declared.variants,
                     Options(allow_stale=allow_stale, variants_path=declared.path))
    return built


def _median(rows, column: str) -> float | None:
    """The median of a column over these rows, None when it holds no value."""
    if column not in rows:
        return None
    values = rows[column].dropna()
    return float(values.median()) if len(values) else None


def _setting(rows, declared: Declaration, variant: str, key: str):
    """A setting as the passes recorded it, else as the variants file declares it, else None."""
    if key in rows:
        values = rows[key].dropna()
        if len(values):
            return values.iloc[0]
    found = declared.variants.get(variant)
    return getattr(found.settings, key, None) if found else None


def _candidate(assessment, measured, declared: Declaration, model_dir: Path):
    """A configuration with an accepted pass, as the plan may carry it: its FLOPs, its memory per GPU, its committed
    cost; None without an accepted pass. `measured`: the report's attempts (report/measured.py)."""
    config = assessment.configuration
    rows = measured.rows_of(config)
    accepted = rows[rows["status"] == Status.ACCEPTED]
    if accepted.empty:
        return None
    precision = str(_setting(accepted, declared, config.variant, "precision") or "fp32")
    quantization = str(_setting(accepted, declared, config.variant, "quantization") or devices.NO_QUANTIZATION)
    count = len(accepted)
    flops = _median(accepted.assign(flops=accepted.get(USEFUL_FLOP_PER_S) * accepted[PASS_S]), "flops") \
        if USEFUL_FLOP_PER_S in accepted else None
    flop_note = (f"useful_flop_per_s x pass_s, median of {count} accepted pass{'es' if count > 1 else ''}" if flops
                 else "no FLOP count recorded on its accepted passes")
    memory, memory_note = _memory(accepted, declared, config, precision, model_dir)
    measured = rules.ConfigurationFigures(config.name, config.variant, config.device, precision, quantization, flops,
                                          flop_note, memory, memory_note, config.gpus)
    return rules.Candidate(measured, assessment.feasible, assessment.committed, assessment.currency,
                           assessment.priced, config.durations.median, assessment.meets_deadline)


def _memory(accepted, declared: Declaration, config, precision: str, model_dir: Path) -> tuple[float | None, str]:
    """The memory per GPU the work needs: its largest GPU peak measured, else (on a CPU) the encoder's estimate from
    the model folder at its batch and max length; else why it is unknown."""
    for column in GPU_MEMORY:
        peak = accepted[column].dropna().max() if column in accepted else None
        if peak is not None and peak > 0:  # an empty column's max is NaN, never > 0
            return float(peak), f"measured: {column} on {config.device}"
    workload = str(_setting(accepted, declared, config.variant, "workload") or "")
    if not _encoder(workload):
        return None, (f"no GPU memory peak measured and no estimate for a {workload or 'unknown'} workload (only "
                      "the encoder kinds have one: `gpucost memory estimate`)")
    variant = declared.variants.get(config.variant)
    if variant is None:
        return None, f"no GPU memory peak measured, and {config.variant} is not in the variants file to estimate it"
    settings = variant.settings
    try:
        return _estimate(model_dir, precision, settings.batch_size, settings.max_length)
    except (GpucostError, OSError, ValueError, KeyError) as exc:
        return None, f"no GPU memory peak measured, and no estimate from {model_dir} ({one_line(exc)})"


def _estimate(model_dir: Path, precision: str, batch: int, max_length: int) -> tuple[float, str]:
    """`gpucost memory estimate`'s total for this model, precision, batch and max length."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    total, linear = safetensors_parameters(model_dir)
    found = estimate(config, total, linear, precision=precision, batch=batch, max_length=max_length)
    return found.total_bytes, (f"estimate: `gpucost memory estimate --model {model_dir} --precision {precision} "
                               f"--batch {batch} --max-length {max_length}`, no GPU peak measured")
