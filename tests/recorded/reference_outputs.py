"""The shipped protocols' references as they ran on their shipped corpora (issue 61): what each bar reads of the
reference's outputs, kept so a unit test can ask whether every bar of every shipped protocol can be shown there.

Recorded with the real model and corpus (`make model`, `gpucost corpus slice`) by one reference pass per protocol
into a store, then read here:

    .venv/bin/python -m tests.recorded.reference_outputs STORE_URI PROTOCOL=RUN_ID ...

(the protocols named are recorded again, the others kept).

Each entry keeps the pass's run, corpus fingerprint and model revision, the inputs in order with their gold labels
and buckets, the labels the reference gave (read from its outputs for generated text), and the point figures a bar
reads without an interval (recall@k of embeddings).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

FILE = Path(__file__).with_name("reference-outputs.json.gz")
POINTS = ("recall_at_k",)  # figures judged as points, read from the run's metrics


def _labels(client, run, protocol) -> list[str] | None:
    """The labels the reference gave, in the scored order; None for an output without labels (embeddings)."""
    import mlflow

    from gpucost_mlflow.workloads.generation import output as generation

    output = protocol.acceptance.output
    if output == "embeddings":
        return None
    if output == "generations":
        folder = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path=generation.GENERATIONS))
        back = generation.read_generations(folder, protocol.task.max_new_tokens)
        return generation.labels_read(back, protocol.labels)
    path = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="predictions.jsonl.gz")
    return {row["id"]: row["label"] for row in map(json.loads, gzip.open(path, "rt", encoding="utf-8"))}


def entry(client, protocol_path: str, run_id: str) -> dict:
    """One shipped protocol's reference outputs, read from its pass."""
    import mlflow

    from gpucost_mlflow.core.inputs.protocol import load_protocol
    from gpucost_mlflow.tracking import schema

    protocol = load_protocol(Path(protocol_path))
    run = client.get_run(run_id)
    verdict = json.loads(Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="verdict.json"))
                         .read_text(encoding="utf-8"))
    facts = schema.run_facts(run)
    found = {"run_id": run_id, "corpus_fingerprint": facts.get(schema.CORPUS_FINGERPRINT, ""),
             "model_revision": run.data.params.get(schema.MODEL_REVISION, ""),
             "points": {key: run.data.metrics[key] for key in POINTS if key in run.data.metrics}}
    scored = verdict.get("scored")
    if scored is None and verdict.get("gold_labels"):  # a verdict that kept no scored inputs: the corpus's rows
        rows = [json.loads(line) for line in Path(protocol.corpus_file).read_text(encoding="utf-8").splitlines()]
        scored = {"ids": [r["id"] for r in rows], "gold": [r["label"] for r in rows],
                  "buckets": [str(r.get("bucket", "")) for r in rows]}
    if scored:
        found.update(ids=scored["ids"], gold=scored["gold"], buckets=scored["buckets"])
        given = _labels(client, run, protocol)
        if given is not None:
            found["labels"] = [given.get(ident, "") for ident in scored["ids"]]
    else:  # an output scored without gold labels (embeddings): its inputs by count
        found["inputs"] = int(run.data.metrics.get("observed_ids", 0))
    return found


def main(argv: list[str]) -> None:
    import mlflow
    from mlflow.tracking import MlflowClient

    mlflow.set_tracking_uri(argv[0])
    client = MlflowClient()
    recorded = json.loads(gzip.decompress(FILE.read_bytes())) if FILE.exists() else {}  # the others kept as they are
    recorded.update({protocol: entry(client, protocol, run_id)
                     for protocol, run_id in (a.split("=", 1) for a in argv[1:])})
    FILE.write_bytes(gzip.compress(json.dumps(recorded, sort_keys=True).encode("utf-8"), mtime=0))
    print(f"{FILE}: {', '.join(recorded)}")


if __name__ == "__main__":
    main(sys.argv[1:])
