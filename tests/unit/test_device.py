"""Device placement, precision ``auto``, the memory levers, and the CPU-side guard for device mistakes (issue 15).

The GPU itself is exercised by tests/gpu (skipped without CUDA); what can be checked without one is here: the
resolution rules (CUDA's answers mocked: unit tests only), the out-of-memory path through a real training loop,
gradient checkpointing's gradient, and that no grpo_core tensor is created on an implicit device in a whole run.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import torch

from grpo_core.errors import DeviceOutOfMemory, UserError
from grpo_core.hardware import device as dev
from grpo_core.hardware.memory import auto_micro_batch, checkpointing, enable_checkpointing
from grpo_core.policy import load_policy
from grpo_core.schemas.config import GRPOConfig
from grpo_core.trainer import train
from tests.device_guard import FACTORIES, ROOT, ImplicitDeviceGuard
from tests.training import ROWS, DigitShare, Recorder

SMALL = {"group_size": 4, "batch_size": 2, "max_steps": 2, "max_completion_tokens": 5, "learning_rate": 0.01}


# --- resolution -------------------------------------------------------------------------------------------------


def test_auto_is_the_cpu_here_and_an_unavailable_gpu_is_refused_clearly() -> None:
    assert dev.resolve_device("auto") == torch.device("cpu")
    assert dev.resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(UserError, match=r"no CUDA device.*'auto'"):
        dev.resolve_device("cuda:0")
    with pytest.raises(UserError, match="'cpu' or 'cuda'"):
        dev.resolve_device("mps")


def test_cuda_auto_and_explicit_indices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert dev.resolve_device("auto") == torch.device("cuda", 1)
    assert dev.resolve_device("cuda") == torch.device("cuda", 1)
    assert dev.resolve_device("cuda:0") == torch.device("cuda", 0)
    with pytest.raises(UserError, match="2 CUDA device"):
        dev.resolve_device("cuda:2")


def test_precision_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = torch.device("cuda", 0)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert dev.resolve_precision("auto", cuda) == ("bf16", "bf16 tensor cores")
    assert dev.resolve_precision("fp32", cuda)[0] == "fp32"  # fp32 stays available
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda d=None: "Tesla V100")
    assert dev.resolve_precision("auto", cuda)[0] == "fp32"
    with pytest.raises(UserError, match="V100 has no bf16"):
        dev.resolve_precision("bf16", cuda)
    cpu = torch.device("cpu")
    monkeypatch.setattr(dev, "cpu_bf16_speedup", lambda: 6.0)
    assert dev.resolve_precision("auto", cpu)[0] == "bf16"
    monkeypatch.setattr(dev, "cpu_bf16_speedup", lambda: 1.1)
    assert dev.resolve_precision("auto", cpu) == ("fp32", "bf16 matmul only 1.1x fp32")


def test_this_cpus_precision_is_its_measured_one() -> None:
    """The demo's answer on this machine: bf16 exactly when bf16 matmuls measure ≥ 2x fp32 (AMX / AVX512-BF16)."""
    speedup = dev.cpu_bf16_speedup()
    precision, why = dev.resolve_precision("auto", torch.device("cpu"))
    assert precision == ("bf16" if speedup >= dev.BF16_MIN_SPEEDUP else "fp32"), why


def test_threads_follow_affinity_and_the_cgroup_quota(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cpu.max").write_text("150000 100000\n")
    assert dev._cgroup_cpu_quota(tmp_path) == 1.5
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert dev._cgroup_cpu_quota(tmp_path) is None
    monkeypatch.setattr(dev.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3, 4, 5, 6, 7})
    monkeypatch.setattr(dev.os, "cpu_count", lambda: 64)
    monkeypatch.setattr(dev, "_cgroup_cpu_quota", lambda: 2.5)
    assert dev.usable_cpus() == 3  # the quota, rounded up; not the node's 64
    monkeypatch.setattr(dev, "_cgroup_cpu_quota", lambda: None)
    assert dev.usable_cpus() == 8  # the affinity mask


def test_config_defaults_are_auto_and_bad_devices_are_422s() -> None:
    cfg = GRPOConfig()
    assert (cfg.device, cfg.precision, cfg.micro_batch_size, cfg.rollout_engine) == ("auto",) * 4
    assert cfg.gradient_checkpointing is None
    with pytest.raises(ValueError, match="device"):
        GRPOConfig.model_validate({"device": "tpu"})
    with pytest.raises(ValueError, match="micro_batch_size"):
        GRPOConfig.model_validate({"micro_batch_size": 0})
    with pytest.raises(RuntimeError, match="resolved"):
        _ = cfg.micro_batch


# --- the run: first event, execution, memory ---------------------------------------------------------------------


def test_a_run_reports_where_it_trains_and_its_peak_memory(tiny_model_dir: Path, tmp_path: Path) -> None:
    rec = Recorder()
    train(GRPOConfig.model_validate(SMALL), tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path)
    ex = rec.execution
    assert ex is not None and ex.device == "cpu" and ex.rollout_engine == "merged"
    assert ex.micro_batch_size == 8 and ex.gradient_checkpointing is False and ex.threads == dev.usable_cpus()
    assert ex.precision == dev.resolve_precision("auto", torch.device("cpu"))[0]
    assert ex.message().startswith(f"Training on CPU, {ex.threads} threads, {ex.precision}")
    for m in rec.steps:
        assert m.memory is not None and m.memory.device == "cpu" and m.memory.peak_allocated_gb > 0.05


def test_micro_batch_auto_is_sized_from_free_gpu_memory(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = GRPOConfig.model_validate({"precision": "fp32", "max_prompt_tokens": 1024, "max_completion_tokens": 1024})
    model, _ = load_policy(tiny_model_dir, cfg, seed=0)
    gpu = dev.Placement(torch.device("cuda", 0), "bf16", "test GPU", 0, "test")
    monkeypatch.setattr(
        "grpo_core.hardware.memory.device_memory_gb", lambda d: None if d.type == "cpu" else (0.001, 80.0)
    )  # 1 MiB
    roomy = GRPOConfig.model_validate({"max_completion_tokens": 16, "max_prompt_tokens": 16, "batch_size": 64})
    small = auto_micro_batch(model, roomy, gpu, checkpointing=False)
    assert 1 <= small < 64
    assert auto_micro_batch(model, roomy, gpu, checkpointing=True) >= small  # checkpointing keeps less
    with pytest.raises(DeviceOutOfMemory, match="max_completion_tokens"):
        auto_micro_batch(model, cfg, gpu, checkpointing=False)  # not even one 2k-token sequence fits in 1 MiB
    cpu = dev.Placement(torch.device("cpu"), "fp32", "cpu", 2, "test")
    assert auto_micro_batch(model, cfg, cpu, checkpointing=False) == 8


def test_token_budget_auto_follows_free_gpu_memory_with_the_fused_head(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grpo_core.hardware.memory import HEAD_BUDGET_BYTES, MAX_AUTO_TOKENS, auto_micro_batch_tokens, token_bytes

    cfg = GRPOConfig.model_validate({"micro_batch_size": 4, "max_prompt_tokens": 100, "max_completion_tokens": 28})
    model, _ = load_policy(tiny_model_dir, cfg, seed=0)
    gpu = dev.Placement(torch.device("cuda", 0), "bf16", "test GPU", 0, "test")
    per_token = token_bytes(model, checkpointing=False, precision_bytes=2)
    free = {"gb": (HEAD_BUDGET_BYTES + 1000.5 * per_token) / (0.7 * 2**30)}  # room for the head's and 1000 tokens
    monkeypatch.setattr("grpo_core.hardware.memory.device_memory_gb", lambda d: (free["gb"], 80.0))
    assert auto_micro_batch_tokens(model, cfg, gpu, checkpointing=False, fused_head=False) == 4 * 128  # padded plan
    assert auto_micro_batch_tokens(model, cfg, gpu, checkpointing=False, fused_head=True) == 1000
    free["gb"] = 1e4
    assert auto_micro_batch_tokens(model, cfg, gpu, checkpointing=False, fused_head=True) == MAX_AUTO_TOKENS
    free["gb"] = 0.01  # less than the head's bound: at least one sequence at its longest
    assert auto_micro_batch_tokens(model, cfg, gpu, checkpointing=False, fused_head=True) == 128
    explicit = cfg.model_copy(update={"max_tokens_per_micro_batch": 333})
    assert auto_micro_batch_tokens(model, explicit, gpu, checkpointing=False, fused_head=True) == 333


def test_gradient_checkpointing_gives_the_same_gradient(tiny_model_dir: Path) -> None:
    """Recomputing activations changes memory, not the gradient (and leaves the model in eval mode); the bound is
    float rounding, as checkpointing turns the policy pass's shared prompt prefix off."""
    from grpo_core.rollout.batch import Rollout
    from grpo_core.update.step import policy_update

    ro = Rollout(
        torch.tensor([[0, 5, 6], [7, 8, 9], [0, 5, 6], [7, 8, 9]]),
        torch.tensor([[0, 1, 1], [1, 1, 1], [0, 1, 1], [1, 1, 1]]),
        torch.tensor([[5, 6, 0], [7, 7, 7], [9, 0, 0], [4, 5, 6]]),
        torch.tensor([[1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 1]]),
        torch.zeros(4, dtype=torch.bool),
        [""] * 4,
    )
    adv = torch.tensor([0.7, -0.3, -1.2, 0.8])
    grads = []
    for gc in (False, True):
        cfg = GRPOConfig.model_validate(
            {"precision": "fp32", "micro_batch_size": 2, "beta": 0.04, "gradient_checkpointing": gc}
        )
        model, _ = load_policy(tiny_model_dir, cfg, seed=0)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.copy_(torch.linspace(-0.1, 0.1, p.numel()).view_as(p))
        if gc:
            enable_checkpointing(model)
        policy_update(model, ro, adv, cfg, None)
        grads.append([p.grad.clone() for p in model.parameters() if p.requires_grad])
        assert not any(m.training for m in model.modules())
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-6)
    with (
        pytest.raises(RuntimeError, match="enable_checkpointing"),
        checkpointing(load_policy(tiny_model_dir, cfg, 0)[0], True),
    ):
        pass


@pytest.mark.parametrize(
    ("packing", "remedy"),
    [(True, r"lower max_tokens_per_micro_batch \(it was \d+\)"), (False, r"lower micro_batch_size \(it was 8\)")],
)
def test_an_out_of_memory_update_fails_with_the_step_and_a_remedy(
    tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, packing: bool, remedy: str
) -> None:
    """The trainer turns torch.OutOfMemoryError into the job's failure with the step, once: no retry loop; the
    remedy names what sizes the run's micro-batches (tokens when packed, rows when padded)."""
    import grpo_core.trainer as trainer

    calls = []

    def exhausted(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(trainer, "policy_update", exhausted)
    with pytest.raises(DeviceOutOfMemory, match=rf"update of step 1.*{remedy}.*checkpoint"):
        train(
            GRPOConfig.model_validate({**SMALL, "packing": packing}),
            tiny_model_dir,
            ROWS,
            [DigitShare()],
            callbacks=Recorder(),
            work_dir=tmp_path,
        )
    assert len(calls) == 1


# --- the guard --------------------------------------------------------------------------------------------------


def test_the_guard_catches_an_implicit_device_in_grpo_core() -> None:
    """The guard itself can fail: code compiled as grpo_core/update/step.py that calls torch.arange(n) is caught."""
    code = compile(
        "import torch\nx = torch.arange(3)\ny = torch.zeros(2, device=x.device)\n",
        str(ROOT / "update" / "step.py"),
        "exec",
    )
    with ImplicitDeviceGuard() as guard:
        exec(code, {})
    assert guard.violations == ["grpo_core/update/step.py:2: torch.arange without device="]


@pytest.mark.parametrize(
    "variant",
    [
        {"rollout_engine": "merged", "beta": 0.04, "num_iterations": 2, "entropy_coef": 0.01, "eval_interval": 1},
        {"rollout_engine": "transformers", "loss_aggregation": "bnpo", "top_entropy_quantile": 0.5},
        {"rollout_engine": "merged", "dynamic_sampling": True, "gfpo_sample_size": 6, "gradient_checkpointing": True},
    ],
    ids=["merged-kl-mu2-eval", "transformers-bnpo", "dynamic-gfpo-checkpointing"],
)
def test_no_tensor_of_a_training_run_is_created_on_an_implicit_device(
    tiny_model_dir: Path, tmp_path: Path, variant: dict[str, Any]
) -> None:
    """A whole run (sampling, scoring, advantages, π_old, update, validation, checkpoint) under the guard: on a
    GPU each of these tensors would have landed on the CPU."""
    cfg = GRPOConfig.model_validate({**SMALL, **variant})
    with ImplicitDeviceGuard() as guard:
        train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=Recorder(), work_dir=tmp_path, valid_rows=ROWS[:2])
    assert not guard.violations, "\n".join(sorted(set(guard.violations)))


def test_no_factory_call_in_grpo_core_lacks_a_device() -> None:
    """The static half of the guard, for paths a CPU run never takes (the vLLM engine, CUDA-only branches)."""
    names = {f.__name__ for f in FACTORIES}
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "torch"
                and node.func.attr in names
                and not any(k.arg == "device" for k in node.keywords)
            ):
                found.append(f"{path.relative_to(ROOT.parent)}:{node.lineno}: torch.{node.func.attr}")
    assert not found, found


def test_checkpointing_auto_turns_on_only_where_the_micro_batch_does_not_fit(
    tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grpo_core.hardware.memory import (
        CHECKPOINT_FREE_ROWS,
        HEAD_BUDGET_BYTES,
        checkpointing_needed,
        planned_sequence_bytes,
        token_bytes,
    )

    cfg = GRPOConfig.model_validate({"group_size": 8, "batch_size": 2, "max_completion_tokens": 64})
    model, _ = load_policy(tiny_model_dir, cfg.model_copy(update={"precision": "fp32"}), seed=0)
    gpu = dev.Placement(torch.device("cuda", 0), "bf16", "test GPU", 0, "test")
    per_seq = planned_sequence_bytes(model, cfg, gpu, checkpointing=False)
    room = CHECKPOINT_FREE_ROWS * per_seq / (0.7 * 2**30)  # exactly 8 rows without checkpointing
    free = {"gb": room * 1.01}
    monkeypatch.setattr("grpo_core.hardware.memory.device_memory_gb", lambda d: (free["gb"], 80.0))
    assert not checkpointing_needed(model, cfg, gpu, engine_share=0.0, fused_head=False)
    assert checkpointing_needed(
        model, cfg, gpu, engine_share=0.5, fused_head=False
    )  # an engine awake beside it takes half
    free["gb"] = room * 0.9
    assert checkpointing_needed(model, cfg, gpu, engine_share=0.0, fused_head=False)
    # with the fused head the logits are its bounded chunk, once, not every row's own
    longest = cfg.max_prompt_tokens + cfg.max_completion_tokens
    fused_room = (CHECKPOINT_FREE_ROWS * longest * token_bytes(model, checkpointing=False, precision_bytes=2)
                  + HEAD_BUDGET_BYTES) / (0.7 * 2**30)  # fmt: skip
    free["gb"] = fused_room * 1.01
    assert not checkpointing_needed(model, cfg, gpu, engine_share=0.0, fused_head=True)
    free["gb"] = fused_room * 0.99
    assert checkpointing_needed(model, cfg, gpu, engine_share=0.0, fused_head=True)
    cpu = dev.Placement(torch.device("cpu"), "fp32", "cpu", 2, "t")
    monkeypatch.setattr("grpo_core.hardware.memory.device_memory_gb", lambda d: None)  # what a CPU answers
    assert not checkpointing_needed(model, cfg, cpu, engine_share=0.0, fused_head=False)


def test_the_memory_plan_by_hand() -> None:
    from types import SimpleNamespace

    from grpo_core.hardware.memory import HEAD_BUDGET_BYTES, memory_plan

    config = SimpleNamespace(num_hidden_layers=2, hidden_size=64, intermediate_size=128, vocab_size=100,
                             num_attention_heads=4, num_key_value_heads=2)  # fmt: skip
    plan = memory_plan(SimpleNamespace(config=config), params=1000, adapted_params=600, lora_params=50, rows=4,
                       sequence_tokens=10, tokens=30, checkpointing=False)  # fmt: skip
    assert (plan.weights, plan.sampler_weights, plan.adapter, plan.head) == (2000, 1200, 800, HEAD_BUDGET_BYTES)
    assert plan.kv_cache == 4 * 10 * 2 * 2 * 2 * 16 * 2  # rows x tokens x layers x (k, v) x kv heads x dim x bf16
    assert plan.activations == 30 * 2 * (12 * 64 + 4 * 128) * 2  # tokens x layers x (12h + 4i) x bf16
    assert plan.update_peak == 2000 + 1200 + plan.activations + HEAD_BUDGET_BYTES + 800
