"""Train the exactness configurations in one process group: ``python -m tests.dist_driver ARGS`` (world size 1) or
``torchrun --nproc-per-node N -m tests.dist_driver ARGS`` (world size N).

For every configuration in ``CONFIGS`` it trains 3 steps of the tiny model in fp32 on the CPU and, on rank 0,
writes the trained LoRA weights (``NAME.pt``) and every step's metrics without wall-clock fields (``NAME.json``),
so tests/distributed/test_exactness.py can compare world sizes. The process group is joined once here and reused
by every ``train`` call (which leaves a group it did not create alone).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from grpo_core.hardware import distributed
from grpo_core.hardware.distributed import World
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.training import ROWS, DigitShare, Recorder, StartsWithDigit

BASE: dict[str, Any] = {
    "group_size": 4,
    "batch_size": 4,
    "max_steps": 3,
    "max_completion_tokens": 8,
    "learning_rate": 0.01,
    "precision": "fp32",
    "device": "cpu",
    "rollout_engine": "merged",
    "micro_batch_size": 4,
    "checkpoint_interval": 0,
}
# The three loss aggregations the issue names, each with group and with batch reward scaling; then the paths that
# take decisions on the gathered batch (β > 0, μ = 2 with clipping, dynamic sampling over several rounds, GFPO,
# two weighted graders) and REINFORCE++'s batch whitening.
CONFIGS: dict[str, dict[str, Any]] = {
    f"{agg}-{scale}": {"loss_aggregation": agg, "scale_rewards": scale}
    for agg in ("seq_mean_token_mean", "token_mean", "bnpo")
    for scale in ("group", "batch")
} | {
    "kl-mu2-dynamic-gfpo": {
        "beta": 0.04,
        "num_iterations": 2,
        "dynamic_sampling": True,
        "dynamic_sampling_max_rounds": 3,
        "gfpo_sample_size": 6,
        "reward_weights": [1.0, 0.5],
        "micro_batch_size": 3,
        "eval_interval": 2,  # with validation rows: scored on rank 0, told to every rank, best checkpoint
        "eval_samples": 2,
    },
    "reinforce_pp": {"recipe": "reinforce_pp", "micro_batch_size": 4},
}
WALL_CLOCK = {"timing": True, "tokens_per_second": True, "memory": True}


def graders_for(name: str) -> list[Any]:
    return [StartsWithDigit(), DigitShare()] if "gfpo" in name else [DigitShare()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", nargs="*", default=None, help="configuration names (default: all)")
    ap.add_argument("--max-steps", type=int, default=None, help="instead of BASE's 3")
    ap.add_argument("--checkpoint-interval", type=int, default=None, help="instead of BASE's 0 (none)")
    ap.add_argument("--stop-after", type=int, default=None, help="stop (with a checkpoint) after this many steps")
    ap.add_argument("--resume-from", type=Path, default=None, help="a checkpoint folder (of any world size)")
    ap.add_argument("--sharding", choices=["replicate", "fsdp"], default="replicate")
    args = ap.parse_args()
    overrides = {
        k: v for k, v in {"max_steps": args.max_steps, "checkpoint_interval": args.checkpoint_interval}.items() if v
    } | {"sharding": args.sharding}
    world = World.from_env()
    torch.set_num_threads(1)
    sharded = _count_sharded_parameters()
    with distributed.process_group(world, torch.device("cpu")):
        for name, extra in CONFIGS.items():
            if args.only and name not in args.only:
                continue
            sharded.clear()
            rec = Recorder(stop_after=args.stop_after)
            cfg = GRPOConfig.model_validate(BASE | extra | overrides)
            work = args.out / f"work-{name}-{world.rank}"
            valid = ROWS[:3] if "eval_interval" in extra else None
            graders = graders_for(name)
            train(
                cfg,
                args.model,
                ROWS,
                graders,
                callbacks=rec,
                work_dir=work,
                seed=11,
                valid_rows=valid,
                world=world,
                resume_from=args.resume_from,
            )
            if world.is_main:
                lora = {k: v.detach().clone() for k, v in _trained(rec).items()}
                torch.save(lora, args.out / f"{name}.pt")
                steps = [m.model_dump(mode="json", exclude=WALL_CLOCK) for m in rec.steps]
                (args.out / f"{name}.json").write_text(json.dumps(steps))
                run = {
                    "messages": [m for _, m in rec.messages],
                    "checkpoints": [str(p) for _, p, _ in rec.ckpts],
                    "execution": rec.execution.model_dump(mode="json") if rec.execution else None,
                    "sharded_parameters": sum(sharded),  # what FSDP2 turned into DTensors (0: nothing sharded)
                }
                (args.out / f"{name}.run.json").write_text(json.dumps(run))


def _count_sharded_parameters() -> list[int]:
    """Wrap the run's ``shard`` (grpo_core.run) so the run can say how many parameters FSDP2 really sharded (the test's
    evidence that ``sharding: fsdp`` did shard, not only that the configuration said so)."""
    from torch.distributed.tensor import DTensor

    import grpo_core.run as run

    counts: list[int] = []
    real = run.shard

    def counting(model: Any, world: World, device: torch.device) -> None:
        real(model, world, device)
        counts.append(sum(isinstance(p, DTensor) for p in model.parameters()))

    run.shard = counting
    return counts


def _trained(rec: Recorder) -> dict[str, torch.Tensor]:
    """The LoRA weights of the final checkpoint (the adapter a user downloads)."""
    from safetensors.torch import load_file

    _step, path, final = rec.ckpts[-1]
    assert final or rec.stop_after is not None, rec.ckpts  # a stopped run's last checkpoint is its stop's
    return load_file(str(path / "adapter_model.safetensors"))


if __name__ == "__main__":
    main()
