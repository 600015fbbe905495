"""GRPO on HumanEval through ``OpenEnv/Coding-v0``: every completion is run against the
problem's asserts in a sandboxed worker, and the fraction that pass is the reward.

Real run (a GPU and a real model; see the README section "Training LLM agents")::

    python examples/trl_grpo_coding.py --model Qwen/Qwen2.5-0.5B-Instruct --workers 16 \\
        --batch-size 8 --num-generations 8 --max-completion-length 256 --max-steps 500 --bf16

CPU smoke run (no download: a tiny random model and a tokenizer trained offline)::

    python examples/trl_grpo_coding.py --tiny --max-steps 2

``--tools`` lets the model call the env instead: TRL's own agent loop
(``environment_factory``) offers ``run_python(code)``, runs each call the model writes in the
sandbox, and scores the rollout with the tests its last call passed (up to 3 calls). It needs
a chat model with tool calling (e.g. ``--model Qwen/Qwen3-0.6B``; ``--tiny`` gets Qwen3's
template, but a random model calls no tool, so it only checks the plumbing).

``--provider`` picks where the code runs: ``auto`` (docker when an engine is reachable,
else local processes with a warning), ``docker`` or ``process``.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", help="hub id or local folder of a causal LM")
    src.add_argument("--tiny", action="store_true", help="tiny random model + offline tokenizer (CPU smoke run)")
    p.add_argument("--tools", action="store_true", help="the model calls run_python (TRL environment_factory)")
    p.add_argument("--provider", default="auto", choices=["auto", "docker", "process", "ray"])
    p.add_argument("--workers", type=int, default=4, help="Coding workers executing completions")
    p.add_argument("--problems", default="0-15", type=problem_indices,
                   help="HumanEval problems (0..163), e.g. '0-15' or '2,5,7' (default 0-15)")
    p.add_argument("--max-steps", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=4, help="completions per device per step")
    p.add_argument("--num-generations", type=int, default=4, help="GRPO group size")
    p.add_argument("--max-completion-length", type=int, default=24)
    p.add_argument("--learning-rate", type=float, default=1e-5)
    p.add_argument("--episode-timeout", type=float, default=30.0, help="seconds per completion before it scores --failure-reward")
    p.add_argument("--failure-reward", type=float, default=0.0, help="reward of a timed-out/crashed episode")
    p.add_argument("--bf16", action="store_true", help="bfloat16 training (GPU)")
    p.add_argument("--use-vllm", action="store_true", help="generate with vLLM (pip install vllm; GPU)")
    p.add_argument("--output-dir", default="grpo-coding")
    return p.parse_args(argv)


def problem_indices(spec: str) -> list[int]:
    """'0-15' or '2,5,7' -> problem numbers; a typo is a usage error, not an empty run."""
    out: list[int] = []
    try:
        for part in spec.split(","):
            lo, _, hi = part.partition("-")
            out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{spec!r}: use numbers and ranges, e.g. '0-15' or '2,5,7'") from None
    if not out or not all(0 <= i < 164 for i in out):
        raise argparse.ArgumentTypeError(f"{spec!r}: HumanEval has problems 0..163 (a range is low-high)")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from trl import GRPOConfig, GRPOTrainer

    from openenv_gym.trl import EnvPool, EnvReward, tool_env_factory
    from openenv_gym.trl.datasets import humaneval_dataset, humaneval_rows

    problems = args.problems
    dataset = humaneval_dataset(problems)
    if args.tiny:
        from openenv_gym.trl.tiny import tiny_model_and_tokenizer

        model, tokenizer = tiny_model_and_tokenizer([r["prompt"] for r in humaneval_rows(problems)])
    else:
        from transformers import AutoTokenizer

        model = args.model  # GRPOTrainer loads it (dtype per --bf16)
        tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    if args.tools:
        # The agent loop talks in chat messages; the tool's schema goes into the prompt.
        dataset = dataset.map(lambda row: {"prompt": [{"role": "user", "content": row["prompt"]}]})
        if args.tiny:
            from trl.chat_template_utils import qwen3_chat_template

            tokenizer.chat_template = qwen3_chat_template
    config = GRPOConfig(
        output_dir=args.output_dir, max_steps=args.max_steps, per_device_train_batch_size=args.batch_size,
        num_generations=args.num_generations, max_completion_length=args.max_completion_length,
        learning_rate=args.learning_rate, logging_steps=1, report_to="none", save_strategy="no",
        use_cpu=args.tiny, bf16=args.bf16, use_vllm=args.use_vllm, seed=0,
    )
    started = time.monotonic()
    # With tools, every call is graded and the last one scores the rollout (the pool's
    # default reward_mode for Coding, "final").
    tool_settings = dict(max_attempts=3) if args.tools else {}
    with EnvPool("coding", num_workers=args.workers, provider=args.provider, task="humaneval",
                 episode_timeout=args.episode_timeout, failure_reward=args.failure_reward,
                 **tool_settings) as pool:
        print(f"{pool!r} ready in {time.monotonic() - started:.1f}s", flush=True)
        if args.tools:
            wiring = dict(environment_factory=tool_env_factory(pool, option_columns=("problem",)))
            logged = "rewards/CodingTools/mean"
        else:
            wiring = dict(reward_funcs=[EnvReward(pool, option_columns=("problem",))])
            logged = "rewards/openenv_coding/mean"
        trainer = GRPOTrainer(model=model, args=config, train_dataset=dataset, processing_class=tokenizer,
                              **wiring)
        trainer.train()
        for entry in trainer.state.log_history:
            if logged in entry:
                calls = f", tool calls per rollout {entry['tools/call_frequency']:.2f}" if args.tools else ""
                print(f"step {entry['step']}: mean reward {entry[logged]:.3f} "
                      f"(fraction of HumanEval asserts passed){calls}", flush=True)
        print(f"episodes {pool.stats['episodes']}, timeouts {pool.stats['timeout']}, "
              f"crashes {pool.stats['crash']}, env errors {pool.stats['env_error']}; "
              f"provider {pool.provider_name}; {time.monotonic() - started:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
