"""Makes the engine image's model at build time: no model hub is reachable, so the weights are random
(a fixed seed) and the tokenizer is trained on text the image already holds. The result sits in a
Hugging Face hub cache under one name, so `vllm serve <name>` finds it offline.

Usage: make_model.py <hub cache dir> <name, e.g. kvpool/llama-32m-random>
"""

import hashlib
import json
import os
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SEED = 20261201
VOCAB = 8192
# A Llama small enough that two CPU cores serve it, big enough that computing a long prompt costs far
# more than loading its KV: 8 KiB of KV per token (bfloat16), 512 KiB per 64-token block. head_dim 64
# is one the CPU attention supports. Saved in float32: CPUs without AVX-512 BF16 run bfloat16 matmuls
# some fifty times slower, so engines serve it with --dtype float32.
CONFIG = dict(
    vocab_size=VOCAB,
    hidden_size=512,
    intermediate_size=1408,
    num_hidden_layers=8,
    num_attention_heads=8,
    num_key_value_heads=4,
    max_position_embeddings=8192,
    rms_norm_eps=1e-5,
    rope_theta=10000.0,
    tie_word_embeddings=False,
    bos_token_id=1,
    eos_token_id=2,
    torch_dtype="float32",
)


def corpus() -> list[str]:
    """Python's standard library sources, in a fixed order: text every image build has."""
    root = Path(os.__file__).parent
    files = sorted(p for p in root.glob("*.py"))
    return [p.read_text(errors="replace") for p in files]


def train_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", bos_token="<s>", eos_token="</s>"
    )


def main() -> None:
    hub, name = Path(sys.argv[1]), sys.argv[2]
    torch.manual_seed(SEED)
    config = LlamaConfig(**CONFIG)
    model = LlamaForCausalLM(config)
    tokenizer = train_tokenizer()
    # The revision names the content, as a hub commit would.
    staging = hub / ".staging"
    model.save_pretrained(staging, safe_serialization=True)
    tokenizer.save_pretrained(staging)
    digest = hashlib.sha1()
    for f in sorted(staging.iterdir()):
        digest.update(f.name.encode())
        digest.update(f.read_bytes())
    revision = digest.hexdigest()
    repo = hub / f"models--{name.replace('/', '--')}"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(revision)
    (repo / "snapshots").mkdir(exist_ok=True)
    staging.rename(repo / "snapshots" / revision)
    params = sum(p.numel() for p in model.parameters())
    print(json.dumps({"name": name, "revision": revision, "parameters": params}))


if __name__ == "__main__":
    main()
