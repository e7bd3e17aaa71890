"""A generation pass's exported file read back from the tracking store, for its reference comparison.

The launcher compares a pass with the reference's generated text when the reference already exists;
`gpucost rejudge` does it later for a pass left pending. Both read the reference's file from its run's
artifacts, as the label comparison reads the reference's predictions.
"""

from __future__ import annotations

from pathlib import Path

import mlflow

from gpucost_mlflow.core.judging import generation_verdicts, judge


def download(run_id: str, folder: Path, max_new_tokens: int) -> generation_verdicts.GenerationReadBack:
    """The run's generations file, downloaded into a folder of its own and read back (a missing one is a format error)."""
    target = folder / f"generations-{run_id}"
    target.mkdir(parents=True, exist_ok=True)
    try:
        mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=generation_verdicts.GENERATIONS,
                                            dst_path=str(target))
    except Exception:  # noqa: BLE001, S110 - a file that cannot be fetched is reported missing by the read-back
        pass
    return generation_verdicts.read_generations(target / generation_verdicts.GENERATIONS, max_new_tokens)


def load_reference(run, folder: Path, max_new_tokens: int) -> generation_verdicts.GenerationReference:
    """The reference pass as the generation judge needs it: its run id and its outputs read back."""
    return generation_verdicts.GenerationReference(run.info.run_id, download(run.info.run_id, folder, max_new_tokens))


def judge_again(run, checks: list, reference_run, acceptance, folder: Path, max_new_tokens: int) -> judge.Judgement:
    """A pending generation pass judged against its reference, both runs' files read from the store."""
    return generation_verdicts.judge_against_reference(
        checks, dict(run.data.metrics), download(run.info.run_id, folder, max_new_tokens),
        load_reference(reference_run, folder, max_new_tokens), acceptance)

