"""A stand-in for vLLM's offline API, for testing gpucost's vLLM code path where vLLM cannot run (no GPU).

It answers every prompt with its own first tokens: enough to run a pass end to end, export and judge it (the
verdict against the torch reference is whatever the bars give). benchmarks/device_check.sh runs the real one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__version__ = "0.0.0"
CALLS: list[dict] = []


@dataclass
class SamplingParams:
    temperature: float = 1.0
    max_tokens: int = 16
    stop_token_ids: list[int] | None = None


@dataclass
class _Completion:
    token_ids: list[int] = field(default_factory=list)
    text: str = ""


@dataclass
class _Output:
    outputs: list[_Completion]


class LLM:
    def __init__(self, model: str, tokenizer: str | None = None, dtype: str = "auto", seed: int = 0, **kwargs):
        self.model, self.dtype = model, dtype
        CALLS.append({"model": model, "dtype": dtype, **kwargs})

    def generate(self, prompts, sampling_params: SamplingParams, use_tqdm: bool = True) -> list[_Output]:
        if sampling_params.temperature != 0.0:
            raise ValueError("the fake answers greedy requests only")
        return [_Output([_Completion(list(prompt["prompt_token_ids"][: min(4, sampling_params.max_tokens)]))])
                for prompt in prompts]
