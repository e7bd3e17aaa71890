"""`gpucost demo variants`: the variants `make demo` runs on this machine, and why any were left out."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import DEFAULT_MODEL_DIR, _file
from gpucost_mlflow.core.campaign import batch_series
from gpucost_mlflow.core.campaign.demo import DEMO_VARIANTS, fit
from gpucost_mlflow.core.errors import GpucostError, one_line
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.variants import Variant, load_variants

DEMO_PROTOCOL = Path("projects/protocol-demo.yaml")


@click.group()
def demo() -> None:
    """What `make demo` runs here."""


@demo.command("variants")
@click.option("--variants", "names", default=",".join(DEMO_VARIANTS), show_default=True,
              help="Comma-separated variants the demo would run before fitting them to this machine.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Device whose cached dense-matmul peaks (`gpucost doctor --peak`) decide.")
@click.option("--list", "as_list", is_flag=True,
              help="Print only the kept variants, comma-separated, on stdout (the Makefile's form); the line saying "
                   "what was left out goes to stderr.")
@click.option("--model", "model_dir", type=click.Path(path_type=Path), default=DEFAULT_MODEL_DIR, show_default=True,
              help="On a GPU: the model whose memory estimate (`gpucost memory estimate`) bounds the batch series.")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=DEMO_PROTOCOL, show_default=True,
              help="On a GPU: the protocol whose corpus size and min_utilisation bound the batch series.")
@click.option("--experiment", default=None,
              help="On a GPU: stop the batch series at the first batch size whose passes in this experiment were not "
                   "starved (their median GPU utilisation at least the protocol's min_utilisation).")
def demo_variants(names, variants_file, device, as_list, model_dir, protocol_file, experiment) -> None:
    """Leave out each variant whose precision runs slower than fp32 here (its cached peak below fp32's), in one line
    saying why; with no peak cached, keep every variant and say so. On a GPU, add the batch series after batch8: it
    doubles from 8 until a measured pass is no longer starved, the memory estimate says the next size will not fit,
    or a batch would hold the whole corpus (core/campaign/batch_series.py). On a CPU the list is unchanged."""
    from gpucost_mlflow.execution.peak import peaks_known, slow_precisions  # deferred: imports torch

    declared = load_variants(_file(variants_file))
    wanted = [name.strip() for name in names.split(",") if name.strip()]
    unknown = [name for name in wanted if name not in declared]
    if not wanted or unknown:
        raise GpucostError(f"unknown demo variant(s) {', '.join(unknown) or '(none given)'} in {variants_file}")
    fitted = fit({name: declared[name].settings.precision for name in wanted}, slow_precisions(device))
    if not fitted.kept:
        raise GpucostError("every demo variant was left out on this machine: " + fitted.line())
    notes = [fitted.line()] if fitted.left_out else []
    if not peaks_known(device):
        notes.append("no dense-matmul peak cached for this device (`gpucost doctor --peak`): every precision kept")
    kept = list(fitted.kept)
    if batch_series.START_VARIANT in kept:
        larger, said = _batch_series(declared, device, model_dir, _file(protocol_file), experiment)
        at = kept.index(batch_series.START_VARIANT) + 1
        kept[at:at] = [name for name in larger if name not in kept]
        notes += [said] if said else []
    if as_list:
        click.echo(",".join(kept))
        for note in notes:
            click.echo(note, err=True)
        return
    click.echo("the demo runs here: " + ", ".join(kept))
    for note in notes:
        click.echo(note)


def _estimates(model_dir: Path, start: Variant, sizes: list[int]) -> tuple[dict[int, float], str]:
    """`gpucost memory estimate`'s total per batch size for the start variant's precision and max length; {} and why
    when the model folder cannot be read."""
    import json

    from gpucost_mlflow.workloads.encoder_memory import estimate, safetensors_parameters  # deferred: GPU only

    settings = start.settings
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        total, linear = safetensors_parameters(model_dir)
        precision = "int8" if settings.quantization != "none" else settings.precision
        return {size: estimate(config, total, linear, precision=precision, batch=size,
                               max_length=settings.max_length).total_bytes for size in sizes}, ""
    except (OSError, ValueError, KeyError, GpucostError) as exc:
        return {}, f"no memory estimate from {model_dir} ({one_line(str(exc))})"


def _batch_series(declared: dict[str, Variant], device_choice: str, model_dir: Path, protocol_path: Path,
                  experiment: str | None) -> tuple[list[str], str]:
    """On a GPU: the declared variants of the batch series above the start (batch16, batch32, ...) and the line saying
    where it stops; nothing on a CPU."""
    import yaml

    from gpucost_mlflow.execution import models  # deferred: imports torch

    where = models.resolve_device(device_choice)
    if where.type != "cuda":
        return [], ""
    import torch

    from gpucost_mlflow.flow.propose import utilisation_by_batch  # deferred: imports mlflow

    props = torch.cuda.get_device_properties(where)
    protocol = yaml.safe_load(protocol_path.read_text(encoding="utf-8")) or {}
    largest = int((protocol.get("corpus") or {}).get("size") or 0) or None
    start = declared[batch_series.START_VARIANT]
    sizes, size = [], batch_series.START
    while size <= (largest or 2**16):
        size *= 2
        sizes.append(size)
    estimates, missing = _estimates(model_dir, start, sizes)
    measured = utilisation_by_batch(experiment, props.name) if experiment else {}
    series = batch_series.propose(props.total_memory, estimates, measured,
                                  float(protocol.get("min_utilisation", 0.5)), largest)
    names = []
    for size in series.sizes[1:]:
        name = f"batch{size}"
        if name not in declared or declared[name].settings != start.settings.changed(batch_size=size):
            return names, (f"batch series on {props.name}: {series.line()}; only up to "
                           f"{names[-1] if names else 'batch8'}: {name} is not declared in the variants file as batch8 "
                           f"with batch_size {size}")
        names.append(name)
    return names, f"batch series on {props.name}: {series.line()}" + (f" ({missing})" if missing else "")


COMMANDS = (demo,)
