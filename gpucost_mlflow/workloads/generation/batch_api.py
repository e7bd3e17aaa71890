"""A hosted API's batch tier, offline: the OpenAI Batch API input file for a corpus, and the provider's output file read
back (`gpucost hosted batch-file`, `gpucost hosted batch-import`).

One request per input, its `custom_id` the input's id, greedy decoding and the protocol's new-token budget, as a live
pass through `engine: openai` sends it. The output file is read strictly: every line accounted for, an input the
provider answered with an error kept as an error (coverage counts it), a line that is not the format refused in one
line naming it. Pure: no network, no openai, no torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from gpucost_mlflow.core.errors import GpucostError

URLS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


def request_lines(ids: list[str], prompts: list[str], model: str, max_tokens: int, api: str) -> list[dict]:
    """The Batch API's input lines: one POST per input, greedy, at most max_tokens new tokens."""
    lines = []
    for ident, prompt in zip(ids, prompts):
        asked = ({"messages": [{"role": "user", "content": prompt}]} if api == "chat" else {"prompt": prompt})
        lines.append({"custom_id": ident, "method": "POST", "url": URLS[api],
                      "body": {"model": model, **asked, "max_tokens": max_tokens, "temperature": 0}})
    return lines


@dataclass
class Returned:
    """What the provider returned: each answered input's text, why it ended and its usage; each failed one's error."""

    answers: dict[str, tuple[str, str, dict]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _answer(body: dict, where: str) -> tuple[str, str, dict]:
    try:
        choice = body["choices"][0]
        text = choice["message"]["content"] if "message" in choice else choice["text"]
        return text or "", choice.get("finish_reason") or "", body.get("usage") or {}
    except (KeyError, IndexError, TypeError):
        raise GpucostError(f"{where}: a response body without choices[0].message.content or choices[0].text") from None


def read_results(path: Path, ids: list[str]) -> Returned:
    """The Batch API's output file for these inputs; an id it does not know, one twice, or a malformed line refused in
    one line (nothing is recorded from such a file)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise GpucostError(f"{path}: cannot read the batch results ({exc.strerror})") from None
    known, found = set(ids), Returned()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            record = json.loads(line)
        except ValueError:
            raise GpucostError(f"{where}: not a JSON line (a truncated download?)") from None
        ident = record.get("custom_id") if isinstance(record, dict) else None
        if ident not in known:
            raise GpucostError(f"{where}: custom_id {ident!r} is not an input of this corpus")
        if ident in found.answers or ident in found.errors:
            raise GpucostError(f"{where}: custom_id {ident!r} appears twice")
        response, error = record.get("response") or {}, record.get("error")
        if error or response.get("status_code") != 200:
            why = (error or {}).get("message") if isinstance(error, dict) else error
            found.errors[ident] = str(why or f"status {response.get('status_code')}")[:200]
            continue
        found.answers[ident] = _answer(response.get("body") or {}, where)
    return found
