"""A tiny randomly initialized causal LM and a tokenizer trained offline, for CPU smoke runs.

No weights are downloaded: the tokenizer is a byte-level BPE trained in memory on a few
strings (so it encodes any text), and the model is a 2-layer Llama with random weights.
The whole GRPO loop then runs on a CPU in seconds. Use a real model (``--model``) to
learn anything.

Example:
    >>> model, tokenizer = tiny_model_and_tokenizer(["def f(x):\\n    return x\\n"])
    >>> tokenizer.padding_side, model.config.num_hidden_layers
    ('left', 2)
"""

from __future__ import annotations

from typing import Any, Sequence

__all__ = ["tiny_model_and_tokenizer", "tiny_tokenizer"]

PAD, EOS = "<pad>", "<eos>"


def tiny_tokenizer(texts: Sequence[str], vocab_size: int = 400) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` (left padding, ``<pad>``/``<eos>``).

    Args:
        texts: Sample text (prompts, code) to learn merges from.
        vocab_size: Target vocabulary size (256 bytes + merges + specials).

    Returns:
        A :class:`transformers.PreTrainedTokenizerFast`.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[PAD, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(list(texts) or [" "], trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=EOS,
                                   bos_token=EOS, padding_side="left")


def tiny_model_and_tokenizer(texts: Sequence[str], *, hidden_size: int = 64, layers: int = 2,
                             seed: int = 0) -> tuple[Any, Any]:
    """A random 2-layer Llama and a tokenizer trained on ``texts``.

    Args:
        texts: Sample text for the tokenizer.
        hidden_size: Width of the model.
        layers: Number of transformer layers.
        seed: Seeds the random weights.

    Returns:
        ``(model, tokenizer)``.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = tiny_tokenizer(texts)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=hidden_size,
                         intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.eos_token_id, tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model, tokenizer
