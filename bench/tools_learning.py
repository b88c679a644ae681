"""Does GRPO with tools learn? The calculator task (bench/tool_task.py) trained on SmolLM2-135M on this CPU.

    .venv/bin/python -m bench.tools_learning [--steps 12] [--temperature 0.7] [--seed 0]

Trains with grpo_core.trainer.train (the merged engine, the job's environment in the bwrap sandbox, the python
grader in its own sandbox), then scores the base model and the trained adapter on the 32 held-out rows the same
way: ``--eval-samples`` episodes per row at the training temperature, and greedily. Prints the reward, the share
of episodes with a valid calculator call, and the malformed-call count, before and after, as JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from bench.tool_task import ENVIRONMENT, GRADER, split
from grpo_core.metrics import episode_stats
from grpo_core.policy import load_policy, make_engine
from grpo_core.rewards.graders import build_graders
from grpo_core.rollout.agent.episodes import make_agent
from grpo_core.rollout.batch import eos_ids
from grpo_core.rollout.engines.base import Sampling
from grpo_core.rollout.scored import sample_and_score
from grpo_core.schemas.config import GRPOConfig
from grpo_core.schemas.environment import EnvironmentSpec
from grpo_core.schemas.graders import PythonGrader
from grpo_core.trainer import train

MODEL = Path(".state/models/SmolLM2-135M-Instruct")


class Log:
    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []

    def on_message(self, message: str, level: str = "info") -> None:
        print(message, flush=True)

    def on_start(self, execution: Any) -> None:
        print(execution.message(), flush=True)

    def on_step(self, m: Any) -> None:
        e = m.episodes
        print(
            f"step {m.step}: reward {m.scores.train_reward_mean:.3f}, turns {e.turns_mean:.2f}, calls "
            f"{e.tool_calls_mean:.2f}, malformed {e.tool_call_errors}, truncated {e.truncated_rate:.2f}, "
            f"{m.timing.step.sampling:.0f}+{m.timing.step.training:.0f} s",
            flush=True,
        )
        self.steps.append(m.model_dump(mode="json", exclude={"samples"}))

    def on_checkpoint(self, step: int, path: Path, metrics: Any, *, final: bool, best: bool) -> None:
        pass

    def should_stop(self) -> bool:
        return False


def evaluate(adapter: Path | None, cfg: GRPOConfig, spec: EnvironmentSpec, rows: list[dict[str, Any]], k: int) -> dict:
    """Reward at the training temperature (k episodes per row) and greedily, with the episodes' tool use."""
    from grpo_core.checkpoint import load_adapter_weights

    model, tok = load_policy(MODEL, cfg, 0)
    if adapter is not None:
        load_adapter_weights(model, adapter)
    graders = build_graders(PythonGrader(type="python", name="answer", source=GRADER))
    agent = make_agent(spec, tok, eos_ids(model, tok), cfg.chat_template_kwargs)
    agent.engine = make_engine("merged", model, tok, MODEL)
    out: dict[str, Any] = {}
    try:
        for name, temperature, samples in (("sampled", cfg.temperature, k), ("greedy", 0.0, 1)):
            sampling = Sampling(samples, cfg.max_completion_tokens, temperature, 1.0, seed=1234)
            prompts = [agent.prompt(r) for r in rows]
            scored = sample_and_score(agent.engine, prompts, rows, graders, sampling, agent=agent)
            ro, n, reward = scored.rollout, len(scored.texts), scored.scores.matrix[:, 0]
            stats = episode_stats(ro.episodes or [])
            called = sum(1 for e in ro.episodes or [] if e.tool_calls)
            out[name] = {
                "reward": round(float(torch.nan_to_num(reward).mean()), 4),
                "episodes_with_a_call": round(called / n, 4),
                "malformed_calls_per_episode": round(stats.tool_call_errors / n, 4),
                "turns_mean": round(stats.turns_mean, 3),
                "episodes": n,
            }
    finally:
        agent.runner.close()
        for g in graders:
            g.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-samples", type=int, default=4)
    p.add_argument("--out", type=Path, default=Path("bench/results/tools_learning.json"))
    args = p.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    train_rows, valid_rows = split()
    cfg = GRPOConfig.model_validate(
        {
            "group_size": 8,
            "batch_size": 4,
            "max_steps": args.steps,
            "max_completion_tokens": 48,
            "max_prompt_tokens": 1024,
            "temperature": args.temperature,
            "precision": "fp32",
            "device": "cpu",
            "rollout_engine": "merged",
            "sample_log_count": 2,
        }
    )
    spec = EnvironmentSpec(source=ENVIRONMENT, max_turns=3, max_total_tokens=160)
    result: dict[str, Any] = {"settings": {"steps": args.steps, "temperature": args.temperature, "seed": args.seed}}
    t0 = time.time()
    result["before"] = evaluate(None, cfg, spec, valid_rows, args.eval_samples)
    print("before", json.dumps(result["before"]), flush=True)
    log = Log()
    graders = build_graders(PythonGrader(type="python", name="answer", source=GRADER))
    with tempfile.TemporaryDirectory() as work:
        t1 = time.time()
        res = train(
            cfg, MODEL, train_rows, graders, callbacks=log, work_dir=Path(work), seed=args.seed, environment=spec
        )
        result["train_seconds"] = round(time.time() - t1, 1)
        for g in graders:
            g.close()
        assert res.final_checkpoint is not None
        result["after"] = evaluate(res.final_checkpoint, cfg, spec, valid_rows, args.eval_samples)
    print("after", json.dumps(result["after"]), flush=True)
    result["steps"] = [
        {"step": s["step"], "reward": s["scores"]["train_reward_mean"], "episodes": s["episodes"]} for s in log.steps
    ]
    result["total_seconds"] = round(time.time() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "steps"}, indent=1))


if __name__ == "__main__":
    main()
