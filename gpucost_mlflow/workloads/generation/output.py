"""Judging generated text: the exported file read back, exact match and token agreement with the reference, and,
where the prompt asks for a label, the label read from each output scored against the gold labels.

A generation pass exports `generations.jsonl.gz`: one line per input with its id, the generated text and
the new token ids (up to and including the end-of-sequence token, never the padding after it). A change of
numerics or batching is judged against the fp32 reference pass's outputs of the same inputs: the share
of outputs identical to the reference's (`reference_exact_match`) and the share of new-token positions
that hold the reference's token (`reference_token_agreement`), each against the protocol's bar. An output
from which no label can be read counts as a wrong answer: it is scored, never dropped.
"""

from __future__ import annotations

import gzip
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError
from gpucost_mlflow.core.inputs.acceptance import Acceptance
from gpucost_mlflow.core.judging import judge, verdicts
from gpucost_mlflow.core.judging.bootstrap import Scored
from gpucost_mlflow.core.judging.bounds import NOT_SHOWN, PASSED, share_bound
from gpucost_mlflow.core.judging.preview import preview as preview_rows
from gpucost_mlflow.core.judging.quality import evaluate
from gpucost_mlflow.core.judging.verdicts import Check
from gpucost_mlflow.core.kinds.settings import Settings
from gpucost_mlflow.core.names import OUTPUT_TOKENS_PER_S
from gpucost_mlflow.workloads.generation.task import DECODING, KEYS, TEXT, GenerationSettings, parse, parse_label

GENERATIONS = "generations.jsonl.gz"
FILES = (GENERATIONS,)
EXACT_CHECK = "reference_exact_match"
TOKENS_CHECK = "reference_tokens"
LENGTH_CHECK = "output_length"
REFERENCE_CHECKS = (EXACT_CHECK, TOKENS_CHECK, LENGTH_CHECK)
NAME = "generations"
FILE = GENERATIONS
MAIN_METRIC = EXACT_CHECK
TOKEN_AGREEMENT = "reference_token_agreement"
LENGTH_CHANGE = "reference_length_change"  # relative change of the median new tokens per input
COLUMNS: tuple[str, ...] = ()  # its figures are in the report's own generation columns
QUALITY_CHECKS = REFERENCE_CHECKS
FIELDS = dict.fromkeys(("acceptance.reference.min_exact_match", "acceptance.reference.min_token_agreement",
                        "acceptance.reference.max_length_change"))
AUDITED = False
# What a variant asks of the model beyond the protocol's fixed task (prompt, chat template, greedy decoding): the
# reference's, or not comparable (core/judging/like_for_like.py).
LIKE_FOR_LIKE = ("max_new_tokens",)
SECTION = "generation"  # the protocol section of its task: prompt, max_new_tokens, answer
SECTION_KEYS = KEYS
NO_SAMPLING = f"generation decoding {DECODING['decoding']}"
FROM_USER_CODE = False
EXAMPLE_PROTOCOL = "projects/protocol-generation.yaml"
UNPARSED = "(no label)"  # what an output without a label word is scored as: never a corpus label, so always wrong


@dataclass
class GenerationReadBack:
    """What the exported file really holds, read from disk: ids in file order, text and new tokens per id."""

    ids: list[str] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, list[int]] = field(default_factory=dict)
    format_errors: list[str] = field(default_factory=list)
    labels: dict = field(default_factory=dict)  # labels read from the outputs, filled by the judge when it reads them


@dataclass(frozen=True)
class GenerationAcceptance:
    """The bar for generated text against the fp32 reference pass's outputs of the same inputs."""

    min_exact_match: float  # share of outputs identical to the reference's, at or above
    min_token_agreement: float  # share of new-token positions holding the reference's token, at or above
    # The median new tokens per input may differ from the reference's by at most this share (MLPerf's +-10 %): a
    # variant that writes less is not faster for the same result.
    max_length_change: float = 0.10


@dataclass(frozen=True)
class GenerationReference:
    """The accepted reference pass a variant is compared with, its outputs read back."""

    run_id: str
    back: GenerationReadBack


def write_generations(path: Path, ids: Sequence[str], texts: Sequence[str], tokens: Sequence[Sequence[int]],
                      duplicate_at: int = 0) -> None:
    """One JSON line per input (id, text, tokens), gzip with a fixed mtime so equal passes give equal bytes."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        for number, (ident, text, new) in enumerate(zip(ids, texts, tokens), 1):
            line = json.dumps({"id": ident, "text": text, "tokens": [int(t) for t in new]}, ensure_ascii=False) + "\n"
            out.write(line.encode("utf-8"))
            if number == duplicate_at:
                out.write(line.encode("utf-8"))


def read_generations(path: Path, max_new_tokens: int) -> GenerationReadBack:
    """Read the export back; every malformed line is a format error, none is skipped silently."""
    back = GenerationReadBack()
    lines = verdicts.read_lines(path, NAME, back.format_errors)
    if lines is None:
        return back
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            ident, text, new = record["id"], record["text"], record["tokens"]
        except (ValueError, KeyError, TypeError):
            back.format_errors.append(f"line {number}: not an object with id, text, tokens")
            continue
        if not isinstance(ident, str) or not isinstance(text, str) or not isinstance(new, list) \
                or not all(isinstance(t, int) and not isinstance(t, bool) for t in new):
            back.format_errors.append(f"line {number}: id and text must be strings, tokens a list of token ids")
            continue
        if len(new) > max_new_tokens:
            back.format_errors.append(f"line {number}: {len(new)} new tokens, more than max_new_tokens "
                                      f"{max_new_tokens}")
            continue
        back.ids.append(ident)
        back.texts.setdefault(ident, text)
        back.tokens.setdefault(ident, new)
    return back


def format_check(back: GenerationReadBack) -> Check:
    if back.format_errors:
        return Check("format", False, f"{len(back.format_errors)} malformed line(s): {back.format_errors[0]}")
    return Check("format", True, "every line has id, text and at most max_new_tokens new token ids")


def labels_read(back: GenerationReadBack, labels: Sequence[str]) -> dict[str, str]:
    """The label read from each output; an output with none is UNPARSED (a wrong answer)."""
    return {ident: parse_label(text, labels) or UNPARSED for ident, text in back.texts.items()}


def token_agreement(mine: Sequence[int], theirs: Sequence[int]) -> tuple[int, int]:
    """(positions holding the same token, positions compared): over the longer of the two, so a missing or an
    extra token is a disagreement."""
    width = max(len(mine), len(theirs))
    return sum(1 for a, b in zip(mine, theirs) if a == b), width


def reference_checks(back: GenerationReadBack, reference: GenerationReference,
                     acceptance) -> tuple[list[Check], dict, dict]:
    """Exact match and token agreement with the reference's outputs: (checks, comparison for the verdict, metrics)."""
    bar = acceptance.bar
    shared = [ident for ident in reference.back.texts if ident in back.texts]
    if not shared:
        checks = [Check(name, False, f"no input generated by both this pass and reference run {reference.run_id}")
                  for name in REFERENCE_CHECKS]
        return checks, {"run_id": reference.run_id, "compared": 0}, {}
    differ = [ident for ident in shared if back.texts[ident] != reference.back.texts[ident]]
    exact = (len(shared) - len(differ)) / len(reference.back.texts)
    same = compared = 0
    for ident in reference.back.tokens:
        agree, width = token_agreement(back.tokens.get(ident, []), reference.back.tokens[ident])
        same, compared = same + agree, compared + width
    tokens = same / compared if compared else 1.0
    run = reference.run_id
    same_outputs = share_bound(len(shared) - len(differ), len(reference.back.texts), bar.min_exact_match,
                               acceptance.confidence)  # judged by its exact interval, as label agreement (issue 51)
    checks = [
        Check(EXACT_CHECK, same_outputs.outcome == PASSED,
              f"outputs identical to reference run {run}'s: {same_outputs.words()}"
              + (f"; first that differs: {differ[0]}" if differ else ""), same_outputs.outcome != NOT_SHOWN),
        Check(TOKENS_CHECK, tokens >= bar.min_token_agreement,
              f"{100 * tokens:.2f} % of {compared} new-token positions hold reference run {run}'s token "
              f"(minimum {100 * bar.min_token_agreement:.2f} %)"),
    ]
    length, change = length_check(back, reference, shared, bar.max_length_change)
    checks.append(length)
    metrics = {MAIN_METRIC: exact, TOKEN_AGREEMENT: tokens, LENGTH_CHANGE: change}
    comparison = {"run_id": run, "compared": len(shared), "differing": len(differ), "differing_ids": differ[:20],
                  "metrics": metrics}
    return checks, comparison, metrics


def length_check(back: GenerationReadBack, reference: GenerationReference, shared: list[str],
                 band: float) -> tuple[Check, float]:
    """The median new tokens per input against the reference's over the same inputs, within +-band: (check, the
    relative change). Outside the band the pass is rejected: 'outputs 20 % shorter than the reference'."""
    mine = statistics.median(len(back.tokens.get(ident, [])) for ident in shared)
    theirs = statistics.median(len(reference.back.tokens.get(ident, [])) for ident in shared)
    change = (mine - theirs) / theirs if theirs else (0.0 if not mine else 1.0)
    words = f"{abs(100 * change):.0f} % {'shorter' if change < 0 else 'longer'}"
    detail = (f"median {mine:g} new tokens per input against reference run {reference.run_id}'s {theirs:g} "
              f"(band +-{100 * band:g} %)")
    if abs(change) > band + 1e-12:
        return Check(LENGTH_CHECK, False, f"outputs {words} than the reference: {detail}"), change
    return Check(LENGTH_CHECK, True, f"outputs within the band: {detail}"), change


def judge_generations(given: judge.Judging) -> judge.Judgement:
    """Judge a generation pass from its file as read back: ids, format, coverage, the label read from each output
    against the gold labels (when the prompt asks for one), exact match and token agreement with the reference.

    Statuses and the quality verdict come from `judge.settle`, so they mean what they mean for labels."""
    back, reference, acceptance, labels = given.back, given.reference, given.acceptance, given.labels
    checks, counts = verdicts.basic_checks([row["id"] for row in given.rows], back)
    checks[0] = format_check(back)
    quality: dict = {}
    if given.protocol.task.answer == "label" and given.gold_labels:
        back.labels = labels_read(back, labels)
        if back.ids:
            quality = evaluate(given.rows, back.labels, labels)
            quality["unparsed_outputs"] = float(sum(1 for label in back.labels.values() if label == UNPARSED))
        checks += verdicts.quality_checks(quality, acceptance, Scored.from_rows(given.rows), back.labels)
    compare = None if reference is None else (lambda: reference_checks(back, reference, acceptance))
    return judge.conclude(given, checks, counts, quality, compare)


def needs_reference(settings: Settings, reference_settings: Settings) -> bool:
    """Generated text is judged against the reference whenever any setting differs from the reference's: a new
    batch size or grouping changes the padded shapes and with them the arithmetic greedy decoding follows."""
    return settings != reference_settings


def acceptance(f, metric: str) -> Acceptance:
    """A generations protocol's bar: exact match and token agreement with the reference; the main metric on the
    label read from each output when the prompt asks for a label (generation.answer: label)."""
    declared = f.document["acceptance"]
    refused = [dotted for dotted in ("reference.max_metric_difference", "reference.min_label_agreement")
               if isinstance(declared.get("reference"), dict) and declared["reference"].get(dotted.split(".")[1])
               is not None]
    if not metric:
        refused += [dotted for dotted in ("main_metric", "threshold", "per_bucket_threshold")
                    if declared.get(dotted) is not None]
    if refused:
        raise GpucostError(f"{f.path}: field 'acceptance.{refused[0]}' does not apply to generated text "
                           "(judged by exact match and token agreement with the reference"
                           + (", and by main_metric only with generation.answer: label)" if not metric else ")"))
    if isinstance(f.document.get("deliverables"), dict) and f.document["deliverables"].get("audit") is not None:
        raise GpucostError(f"{f.path}: field 'deliverables.audit' compares labels; a {NAME} protocol has none")
    return Acceptance(
        coverage=f.fraction("acceptance.coverage"), main_metric=metric,
        threshold=f.fraction("acceptance.threshold") if metric else None,
        per_bucket_threshold=f.fraction("acceptance.per_bucket_threshold") if metric else None,
        reference_variant=f.get("acceptance.reference.variant", str), max_metric_difference=None,
        min_label_agreement=None, output=NAME,
        bar=GenerationAcceptance(
            min_exact_match=f.fraction("acceptance.reference.min_exact_match"),
            min_token_agreement=f.fraction("acceptance.reference.min_token_agreement"),
            max_length_change=(f.fraction("acceptance.reference.max_length_change")
                               if declared.get("reference", {}).get("max_length_change") is not None else 0.10),
        ),
    )


def task(section, where: str, output: str) -> GenerationSettings:
    """The `generation:` section as the task every variant runs (task.parse); refused in one line when a protocol
    judging another output declares it, or when a generations protocol lacks it."""
    if output != NAME:
        raise GpucostError(f"{where}: field '{SECTION}' declares a generation task; this protocol's output is "
                           f"{output} (acceptance.output: {NAME} judges generated text)")
    if section is None:
        raise GpucostError(f"{where}: missing field '{SECTION}' (prompt with {TEXT} and max_new_tokens)")
    return parse(section, where)


def scored(task: GenerationSettings | None) -> bool:
    """Generated text is scored against gold labels only when the prompt asks for a label."""
    return task is not None and task.answer == "label"


def read_back(folder: Path, protocol, labels: list[str]) -> GenerationReadBack:
    """The generations file read back, no output longer than the protocol's max_new_tokens."""
    return read_generations(folder / GENERATIONS, protocol.task.max_new_tokens)


def reference(run_id: str, metrics: dict, folder: Path, protocol, labels: list[str]) -> GenerationReference:
    """The reference pass as the generation judge needs it: its run id and its outputs read back."""
    return GenerationReference(run_id, read_back(folder, protocol, labels))


def judge_pass(given: judge.Judging) -> judge.Judgement:
    """A generation pass judged from its file (`judge_generations`), against the protocol's labels."""
    return judge_generations(replace(given, labels=list(given.protocol.labels)))


def judge_against_reference(prior: Sequence[Check], metrics: dict, back: GenerationReadBack,
                            reference: GenerationReference, acceptance, first: dict | None = None) -> judge.Judgement:
    """A pending generation pass judged again once its reference exists: its own checks kept, the comparison added."""
    found, comparison, measured = reference_checks(back, reference, acceptance)
    return judge.rejudged(prior, REFERENCE_CHECKS, found, comparison, {**metrics, **measured})


def preview(rows: list[dict], back: GenerationReadBack, gold_labels: bool, folder: Path) -> dict | None:
    """The outputs beside their inputs, with the label read from each where the prompt asks for one."""
    if not (folder / GENERATIONS).exists():
        return None
    if back.labels:  # labels read from the outputs (the prompt asks for one and the corpus has gold labels)
        return preview_rows(rows, back.labels, gold_labels, outputs=back.texts)
    return preview_rows(rows, dict.fromkeys(back.texts, ""), gold_labels=False, outputs=back.texts)


def merge(folders: list[Path], workdir: Path) -> None:
    """The lanes' generations as one file, lane after lane."""
    verdicts.merge_json_lines(GENERATIONS, folders, workdir)


def figures(metrics: dict) -> str:
    """Its figures on the pass's summary line: output tokens per second, agreement with the reference."""
    shown = f", {metrics[OUTPUT_TOKENS_PER_S]:.1f} output tokens/s" if OUTPUT_TOKENS_PER_S in metrics else ""
    if MAIN_METRIC in metrics:
        shown += f", exact match {metrics[MAIN_METRIC]:.3f}, token agreement {metrics[TOKEN_AGREEMENT]:.3f}"
    return shown


def bar(a: Acceptance) -> str:
    """A generations protocol's bar in words: ids and coverage, the label read from the outputs when the prompt asks
    for one, exact match and token agreement with the reference."""
    g = a.bar
    labels = (f"{a.main_metric} of the label read from each output at least {a.threshold:g} on the whole corpus and "
              f"{a.per_bucket_threshold:g} in every length bucket; " if a.main_metric else "")
    return (f"{labels}exactly the expected ids, coverage {100 * a.coverage:g} %; any other variant than "
            f"{a.reference_variant} gives its output exactly on at least {100 * g.min_exact_match:g} % of the inputs "
            f"and its token on at least {100 * g.min_token_agreement:g} % of the new-token positions, its median "
            f"output length within +-{100 * g.max_length_change:g} % of the reference's")
