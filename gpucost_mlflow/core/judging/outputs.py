"""What each kind of output a protocol judges (`acceptance.output`) exports: the one file a reader points to."""

from __future__ import annotations

from gpucost_mlflow.core.judging import embedding_verdicts, generation_verdicts, verdicts

EXPORTED = {
    "labels": verdicts.PREDICTIONS,
    "embeddings": embedding_verdicts.EMBEDDINGS,
    "generations": generation_verdicts.GENERATIONS,
}


def exported_file(output: str) -> str:
    """The file a pass judged on this output exports (its predictions, embeddings or generated text)."""
    return EXPORTED[output]
