"""An embeddings pass's exported files read back from the tracking store, for its reference comparison.

The launcher compares a pass with the reference's embeddings when the reference already exists;
`gpucost rejudge` does it later for a pass left pending. Both read the reference's files from its run's
artifacts, as the label comparison reads the reference's predictions.
"""

from __future__ import annotations

from pathlib import Path

import mlflow

from gpucost_mlflow.core.judging import embedding_verdicts, judge


def download(run_id: str, folder: Path) -> embedding_verdicts.EmbeddingReadBack:
    """The run's embeddings files, downloaded into a folder of their own and read back (a missing one is a format error)."""
    target = folder / f"embeddings-{run_id}"
    target.mkdir(parents=True, exist_ok=True)
    for name in embedding_verdicts.FILES:
        try:
            mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=name, dst_path=str(target))
        except Exception:  # noqa: BLE001, S110 - a file that cannot be fetched is reported missing by the read-back
            pass
    return embedding_verdicts.read_embeddings(target)


def load_reference(run, folder: Path) -> embedding_verdicts.EmbeddingReference:
    """The reference pass as the embeddings judge needs it: its run id and its embeddings read back."""
    return embedding_verdicts.EmbeddingReference(run.info.run_id, download(run.info.run_id, folder))


def judge_again(run, checks: list, reference_run, acceptance, folder: Path) -> judge.Judgement:
    """A pending embeddings pass judged against its reference, both runs' files read from the store."""
    return embedding_verdicts.judge_against_reference(checks, dict(run.data.metrics), download(run.info.run_id, folder),
                                                      load_reference(reference_run, folder), acceptance)

