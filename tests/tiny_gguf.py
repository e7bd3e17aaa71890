"""The generation plumbing tests' model: a 2-layer, 64-wide Llama written as a GGUF file, with the packaged SmolLM2
file's own tokenizer (its vocabulary, merges and special tokens copied from the file's metadata) and seeded weights.

A generation pass loads, dequantises, converts (CTranslate2), generates, exports and is judged as with the real
SmolLM2-135M-Instruct, in a fraction of its load and compute; the packaged file stays the default of the demo
and of `tests/test_generation.py::test_the_packaged_gguf_is_the_default_model_and_named_in_the_manifest`.
"""

from __future__ import annotations

from pathlib import Path

TINY = {"block_count": 2, "embedding_length": 64, "feed_forward_length": 128, "attention.head_count": 4,
        "attention.head_count_kv": 2, "rope.dimension_count": 16}
COPIED_PREFIXES = ("tokenizer.", "general.architecture", "llama.context_length", "llama.rope.freq_base",
                   "llama.attention.layer_norm_rms_epsilon", "llama.vocab_size")


def _copy_field(writer, field) -> None:
    """One metadata field of the source file, written with its own GGUF type."""
    import gguf

    kind = field.types[0]
    value = field.contents()
    if kind == gguf.GGUFValueType.ARRAY:
        writer.add_array(field.name, value)
    else:
        writer.add_key_value(field.name, value, kind)


def build_tiny_gguf(out: Path, source: Path, seed: int = 0) -> Path:
    """Write `out`: the tokenizer metadata of `source` (a llama GGUF file) and a seeded 2-layer llama in F32."""
    import gguf
    import numpy as np

    reader = gguf.GGUFReader(str(source))
    vocab = int(reader.fields["llama.vocab_size"].contents())
    writer = gguf.GGUFWriter(str(out), "llama")
    for name, field in reader.fields.items():
        if name.startswith(COPIED_PREFIXES) and name != "general.architecture":
            _copy_field(writer, field)
    writer.add_name("gpucost tests: tiny llama with SmolLM2's tokenizer")
    for key, value in TINY.items():
        writer.add_uint32(f"llama.{key}", value)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    rng = np.random.default_rng(seed)
    hidden, ff = TINY["embedding_length"], TINY["feed_forward_length"]
    kv = hidden * TINY["attention.head_count_kv"] // TINY["attention.head_count"]

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    writer.add_tensor("token_embd.weight", weights(vocab, hidden))
    writer.add_tensor("output_norm.weight", np.ones(hidden, dtype=np.float32))
    for block in range(TINY["block_count"]):
        for name, shape in (("attn_q", (hidden, hidden)), ("attn_k", (kv, hidden)), ("attn_v", (kv, hidden)),
                            ("attn_output", (hidden, hidden)), ("ffn_gate", (ff, hidden)), ("ffn_up", (ff, hidden)),
                            ("ffn_down", (hidden, ff))):
            writer.add_tensor(f"blk.{block}.{name}.weight", weights(*shape))
        for name in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{block}.{name}.weight", np.ones(hidden, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out
