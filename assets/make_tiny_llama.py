#!/usr/bin/env python3
"""Make a tiny alpaca-format dataset and a tiny Llama model for LLaMA-Factory runs on CPU.

Nothing is downloaded: the dataset is generated from a seed, the tokenizer is a byte-level
BPE trained on that dataset with the ``tokenizers`` library, and the model is a
``LlamaForCausalLM`` of a real architecture with random weights, so LLaMA-Factory's Llama
code paths (LoRA on q_proj/k_proj/..., the chat template, save_pretrained) are the real
ones. The same seed gives the same files.

Writes:
    DATASET_DIR/FILE_NAME   a JSON list of {"instruction", "input", "output"} records
    MODEL_DIR/              config.json, model.safetensors, tokenizer.json and
                            tokenizer_config.json (with a chat template), from save_pretrained

Usage: make_tiny_llama.py --model-dir DIR --dataset-dir DIR [--records N] [--seed N]
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path

Record = dict[str, str]

# The special tokens of the tokenizer, in id order (pad 0, bos 1, eos 2, unk 3).
PAD, BOS, EOS, UNK = "<pad>", "<s>", "</s>", "<unk>"

# A plain chat template (LLaMA-Factory's own templates format the training data; this one
# is for tokenizer.apply_chat_template users, e.g. `llamafactory-cli chat`).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['role'] == 'user' %}Human: {{ message['content'] }}\n"
    "{% elif message['role'] == 'assistant' %}Assistant: {{ message['content'] }}{{ eos_token }}\n"
    "{% else %}{{ message['content'] }}\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}Assistant: {% endif %}"
)

WORDS = ["apple", "river", "stone", "cloud", "green", "train", "music", "paper", "light", "ocean"]


def _add(rng: random.Random) -> Record:
    a, b = rng.randint(0, 99), rng.randint(0, 99)
    return {"instruction": "Add the two numbers.", "input": f"{a} and {b}", "output": str(a + b)}


def _reverse(rng: random.Random) -> Record:
    word = rng.choice(WORDS)
    return {"instruction": "Reverse the word.", "input": word, "output": word[::-1]}


def _upper(rng: random.Random) -> Record:
    word = rng.choice(WORDS)
    return {"instruction": "Write the word in capital letters.", "input": word, "output": word.upper()}


def _count(rng: random.Random) -> Record:
    n = rng.randint(1, 6)
    return {
        "instruction": "Count from one.",
        "input": "",
        "output": " ".join(["one", "two", "three", "four", "five", "six"][:n]),
    }


TASKS: tuple[Callable[[random.Random], Record], ...] = (_add, _reverse, _upper, _count)


def make_records(count: int, seed: int) -> list[Record]:
    """``count`` alpaca records, the tasks in turn, values drawn from ``seed``."""
    rng = random.Random(seed)
    return [TASKS[index % len(TASKS)](rng) for index in range(count)]


def train_tokenizer(texts: list[str], vocab_size: int) -> object:
    """A byte-level BPE trained on ``texts``, as a LlamaTokenizerFast (any text encodes)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, BOS, EOS, UNK],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return LlamaTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        unk_token=UNK,
        pad_token=PAD,
        add_bos_token=True,
        add_eos_token=False,
        legacy=False,
        chat_template=CHAT_TEMPLATE,
    )


def make_model(model_dir: Path, texts: list[str], seed: int, hidden: int, layers: int, heads: int) -> None:
    """Train the tokenizer on ``texts`` and save it with a random tiny Llama in ``model_dir``."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = train_tokenizer(texts, vocab_size=1024)
    vocab = len(tokenizer)  # type: ignore[arg-type]
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=512,
        bos_token_id=tokenizer.bos_token_id,  # type: ignore[attr-defined]
        eos_token_id=tokenizer.eos_token_id,  # type: ignore[attr-defined]
        pad_token_id=tokenizer.pad_token_id,  # type: ignore[attr-defined]
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(model_dir, safe_serialization=True)
    tokenizer.save_pretrained(model_dir)  # type: ignore[attr-defined]
    print(f"make_tiny_llama: model in {model_dir}: vocab {vocab}, hidden {hidden}, {layers} layers, "
          f"{sum(p.numel() for p in model.parameters())} parameters")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, required=True, help="where the model is saved")
    parser.add_argument("--dataset-dir", type=Path, required=True, help="where the dataset file is written")
    parser.add_argument("--file-name", default="tiny_alpaca.json", help="dataset file name (default tiny_alpaca.json)")
    parser.add_argument("--records", type=int, default=48, help="dataset records (default 48)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and the weights (default 0)")
    parser.add_argument("--hidden", type=int, default=64, help="hidden size (default 64)")
    parser.add_argument("--layers", type=int, default=2, help="decoder layers (default 2)")
    parser.add_argument("--heads", type=int, default=4, help="attention heads (default 4)")
    args = parser.parse_args(argv)
    if args.records < 1:
        parser.error(f"--records must be at least 1, got {args.records}")
    if args.hidden % args.heads:
        parser.error(f"--hidden {args.hidden} must be a multiple of --heads {args.heads}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    records = make_records(args.records, args.seed)
    args.dataset_dir.mkdir(parents=True, exist_ok=True)
    dataset_file = args.dataset_dir / args.file_name
    dataset_file.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    print(f"make_tiny_llama: {len(records)} records in {dataset_file}")
    texts = [" ".join(record.values()) for record in records]
    texts += ["Human: Assistant: ### Instruction: ### Response:"]  # the template's own words
    make_model(args.model_dir, texts, args.seed, args.hidden, args.layers, args.heads)


if __name__ == "__main__":
    main()
