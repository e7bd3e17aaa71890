"""A stand-in OpenAI-compatible embeddings server for the tests: no real one installs here offline (`transformers
serve` has no /v1/embeddings, vLLM needs a GPU build). It serves the real model folder given on its command line with
transformers, mean-pooled over the real tokens and L2-normalised when the folder's modules.json says so, in float32,
as gpucost's torch embeddings path computes them (workloads/embeddings/child.py).

    python -m tests.fakes.embeddings_server MODEL_FOLDER --port PORT

GET /health, GET /v1/models (the folder as given is the model's id, as `transformers serve` names it) and POST
/v1/embeddings in OpenAI's shape: `input` a string or a list of strings, `data[i].embedding` (float, or base64 of
little-endian float32), `usage.prompt_tokens` and `usage.total_tokens` (the tokens read, special tokens included).
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

import numpy as np
import torch
import uvicorn
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel
from transformers import AutoModel, AutoTokenizer

NORMALIZE = "sentence_transformers.models.Normalize"


class Request(BaseModel):
    """OpenAI's embeddings request, the fields this server reads."""

    model: str
    input: str | list[str]
    encoding_format: str = "float"


def _normalizes(folder: Path) -> bool:
    """Whether the folder's sentence-transformers modules end in a normalisation."""
    modules = folder / "modules.json"
    return modules.exists() and any(m["type"] == NORMALIZE for m in json.loads(modules.read_text(encoding="utf-8")))


def app_for(folder: str) -> FastAPI:
    """The app serving this folder's encoder."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="sdpa").eval()
    normalize = _normalizes(Path(folder))
    app = FastAPI()

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/models")
    def models() -> dict:
        return {"object": "list", "data": [{"id": folder, "object": "model", "created": 0, "owned_by": "tests"}]}

    @app.post("/v1/embeddings")
    def embeddings(request: Request) -> dict:
        if request.model != folder:
            raise HTTPException(404, f"model {request.model!r} is not served here")
        texts = [request.input] if isinstance(request.input, str) else request.input
        encoded = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        with torch.inference_mode():
            hidden = model(input_ids=encoded["input_ids"],
                           attention_mask=encoded["attention_mask"]).last_hidden_state.float()
            weights = encoded["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
            if normalize:
                pooled = torch.nn.functional.normalize(pooled, dim=-1)
        rows = pooled.numpy().astype(np.float32)
        data = [{"object": "embedding", "index": index,
                 "embedding": (base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
                               if request.encoding_format == "base64" else row.tolist())}
                for index, row in enumerate(rows)]
        tokens = int(encoded["attention_mask"].sum())
        return {"object": "list", "data": data, "model": folder,
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}

    return app


def main() -> None:
    """Serve the folder on 127.0.0.1 at the given port."""
    parser = argparse.ArgumentParser()
    parser.add_argument("model")
    parser.add_argument("--port", type=int, required=True)
    arguments = parser.parse_args()
    uvicorn.run(app_for(arguments.model), host="127.0.0.1", port=arguments.port, log_level="warning")


if __name__ == "__main__":
    main()
