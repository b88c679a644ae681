# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.execution_backend_type_0 import ExecutionBackendType0, check_execution_backend_type_0
from ..models.execution_precision import ExecutionPrecision, check_execution_precision
from ..models.execution_rollout_engine import ExecutionRolloutEngine, check_execution_rollout_engine
from ..models.execution_sharding_type_0 import ExecutionShardingType0, check_execution_sharding_type_0
from ..types import UNSET, Unset

T = TypeVar("T", bound="Execution")


@_attrs_define
class Execution:
    """Where and how the worker runs the job: what the ``auto`` hyperparameters resolved to on its hardware.

    Attributes:
        device (str): cuda:N or cpu.
        device_name (str): The GPU's name (e.g. 'NVIDIA H100 80GB HBM3') or the CPU's model name.
        gradient_checkpointing (bool):
        micro_batch_size (int):
        precision (ExecutionPrecision):
        precision_reason (str): Why: 'requested', 'bf16 tensor cores', 'bf16 matmul 6.2x fp32', …
        rollout_engine (ExecutionRolloutEngine):
        backend (ExecutionBackendType0 | None | Unset): torch.distributed backend; null for one rank.
        capture_update (bool | Unset): The update's packed passes replay as CUDA graphs at a few token buckets. Default:
            False.
        device_total_gb (float | None | Unset): The GPU's total memory in GiB; null on a CPU.
        fused_lm_head (bool | Unset): The LM head runs in chunks fused with the log-prob. Default: False.
        max_staleness (int | Unset): 0: synchronous (sample, score, update in turn). k > 0: the sampler runs beside the
            trainer and a batch trains on samples at most k policy versions old. Default: 0.
        max_tokens_per_micro_batch (int | None | Unset): The packed micro-batch's token budget.
        packing (bool | Unset): The update runs packed micro-batches (no padding); false: padded ones of
            micro_batch_size. Default: False.
        pool_tenants (int | None | Unset): The job shares its worker's resident base model: how many tenants (jobs) the
            worker held when it started, itself included (each trains its own adapter, in turn); null: a worker of its own.
        pool_together (bool | Unset): A pooled job's rollouts and updates are computed together with the other tenants'
            (equal to the job alone within rounding); false: in turn, bit for bit as alone. Default: False.
        ranks_per_node (int | Unset): Ranks on each node; `device` and `threads` are rank 0's. Default: 1.
        sampler (None | str | Unset): max_staleness > 0: where the sampler runs, e.g. 'its own process, 1 thread (cores
            1)'; null when it runs in the training process.
        sharding (ExecutionShardingType0 | None | Unset): How the ranks hold the model: whole on each, or its base
            weights sharded with FSDP2; null for one rank.
        threads (int | None | Unset): torch's CPU threads (the CPUs the worker may use); null on a GPU.
        vllm_gpu_memory_utilization (float | None | Unset): The vLLM engine's share of the GPU.
        vllm_sleep_mode (bool | None | Unset): Whether the vLLM engine sleeps during each update (its GPU memory handed
            to the update).
        world_size (int | Unset): Training processes (ranks) of this attempt, over all nodes. Default: 1.
    """

    device: str
    device_name: str
    gradient_checkpointing: bool
    micro_batch_size: int
    precision: ExecutionPrecision
    precision_reason: str
    rollout_engine: ExecutionRolloutEngine
    backend: ExecutionBackendType0 | None | Unset = UNSET
    capture_update: bool | Unset = False
    device_total_gb: float | None | Unset = UNSET
    fused_lm_head: bool | Unset = False
    max_staleness: int | Unset = 0
    max_tokens_per_micro_batch: int | None | Unset = UNSET
    packing: bool | Unset = False
    pool_tenants: int | None | Unset = UNSET
    pool_together: bool | Unset = False
    ranks_per_node: int | Unset = 1
    sampler: None | str | Unset = UNSET
    sharding: ExecutionShardingType0 | None | Unset = UNSET
    threads: int | None | Unset = UNSET
    vllm_gpu_memory_utilization: float | None | Unset = UNSET
    vllm_sleep_mode: bool | None | Unset = UNSET
    world_size: int | Unset = 1
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        device = self.device

        device_name = self.device_name

        gradient_checkpointing = self.gradient_checkpointing

        micro_batch_size = self.micro_batch_size

        precision: str = self.precision

        precision_reason = self.precision_reason

        rollout_engine: str = self.rollout_engine

        backend: None | str | Unset
        if isinstance(self.backend, Unset):
            backend = UNSET
        elif isinstance(self.backend, str):
            backend = self.backend
        else:
            backend = self.backend

        capture_update = self.capture_update

        device_total_gb: float | None | Unset
        if isinstance(self.device_total_gb, Unset):
            device_total_gb = UNSET
        else:
            device_total_gb = self.device_total_gb

        fused_lm_head = self.fused_lm_head

        max_staleness = self.max_staleness

        max_tokens_per_micro_batch: int | None | Unset
        if isinstance(self.max_tokens_per_micro_batch, Unset):
            max_tokens_per_micro_batch = UNSET
        else:
            max_tokens_per_micro_batch = self.max_tokens_per_micro_batch

        packing = self.packing

        pool_tenants: int | None | Unset
        if isinstance(self.pool_tenants, Unset):
            pool_tenants = UNSET
        else:
            pool_tenants = self.pool_tenants

        pool_together = self.pool_together

        ranks_per_node = self.ranks_per_node

        sampler: None | str | Unset
        if isinstance(self.sampler, Unset):
            sampler = UNSET
        else:
            sampler = self.sampler

        sharding: None | str | Unset
        if isinstance(self.sharding, Unset):
            sharding = UNSET
        elif isinstance(self.sharding, str):
            sharding = self.sharding
        else:
            sharding = self.sharding

        threads: int | None | Unset
        if isinstance(self.threads, Unset):
            threads = UNSET
        else:
            threads = self.threads

        vllm_gpu_memory_utilization: float | None | Unset
        if isinstance(self.vllm_gpu_memory_utilization, Unset):
            vllm_gpu_memory_utilization = UNSET
        else:
            vllm_gpu_memory_utilization = self.vllm_gpu_memory_utilization

        vllm_sleep_mode: bool | None | Unset
        if isinstance(self.vllm_sleep_mode, Unset):
            vllm_sleep_mode = UNSET
        else:
            vllm_sleep_mode = self.vllm_sleep_mode

        world_size = self.world_size

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "device": device,
                "device_name": device_name,
                "gradient_checkpointing": gradient_checkpointing,
                "micro_batch_size": micro_batch_size,
                "precision": precision,
                "precision_reason": precision_reason,
                "rollout_engine": rollout_engine,
            }
        )
        if backend is not UNSET:
            field_dict["backend"] = backend
        if capture_update is not UNSET:
            field_dict["capture_update"] = capture_update
        if device_total_gb is not UNSET:
            field_dict["device_total_gb"] = device_total_gb
        if fused_lm_head is not UNSET:
            field_dict["fused_lm_head"] = fused_lm_head
        if max_staleness is not UNSET:
            field_dict["max_staleness"] = max_staleness
        if max_tokens_per_micro_batch is not UNSET:
            field_dict["max_tokens_per_micro_batch"] = max_tokens_per_micro_batch
        if packing is not UNSET:
            field_dict["packing"] = packing
        if pool_tenants is not UNSET:
            field_dict["pool_tenants"] = pool_tenants
        if pool_together is not UNSET:
            field_dict["pool_together"] = pool_together
        if ranks_per_node is not UNSET:
            field_dict["ranks_per_node"] = ranks_per_node
        if sampler is not UNSET:
            field_dict["sampler"] = sampler
        if sharding is not UNSET:
            field_dict["sharding"] = sharding
        if threads is not UNSET:
            field_dict["threads"] = threads
        if vllm_gpu_memory_utilization is not UNSET:
            field_dict["vllm_gpu_memory_utilization"] = vllm_gpu_memory_utilization
        if vllm_sleep_mode is not UNSET:
            field_dict["vllm_sleep_mode"] = vllm_sleep_mode
        if world_size is not UNSET:
            field_dict["world_size"] = world_size

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        device = d.pop("device")

        device_name = d.pop("device_name")

        gradient_checkpointing = d.pop("gradient_checkpointing")

        micro_batch_size = d.pop("micro_batch_size")

        precision = check_execution_precision(d.pop("precision"))

        precision_reason = d.pop("precision_reason")

        rollout_engine = check_execution_rollout_engine(d.pop("rollout_engine"))

        def _parse_backend(data: object) -> ExecutionBackendType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                backend_type_0 = check_execution_backend_type_0(data)

                return backend_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ExecutionBackendType0 | None | Unset, data)

        backend = _parse_backend(d.pop("backend", UNSET))

        capture_update = d.pop("capture_update", UNSET)

        def _parse_device_total_gb(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        device_total_gb = _parse_device_total_gb(d.pop("device_total_gb", UNSET))

        fused_lm_head = d.pop("fused_lm_head", UNSET)

        max_staleness = d.pop("max_staleness", UNSET)

        def _parse_max_tokens_per_micro_batch(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens_per_micro_batch = _parse_max_tokens_per_micro_batch(d.pop("max_tokens_per_micro_batch", UNSET))

        packing = d.pop("packing", UNSET)

        def _parse_pool_tenants(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        pool_tenants = _parse_pool_tenants(d.pop("pool_tenants", UNSET))

        pool_together = d.pop("pool_together", UNSET)

        ranks_per_node = d.pop("ranks_per_node", UNSET)

        def _parse_sampler(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sampler = _parse_sampler(d.pop("sampler", UNSET))

        def _parse_sharding(data: object) -> ExecutionShardingType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                sharding_type_0 = check_execution_sharding_type_0(data)

                return sharding_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ExecutionShardingType0 | None | Unset, data)

        sharding = _parse_sharding(d.pop("sharding", UNSET))

        def _parse_threads(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        threads = _parse_threads(d.pop("threads", UNSET))

        def _parse_vllm_gpu_memory_utilization(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        vllm_gpu_memory_utilization = _parse_vllm_gpu_memory_utilization(d.pop("vllm_gpu_memory_utilization", UNSET))

        def _parse_vllm_sleep_mode(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        vllm_sleep_mode = _parse_vllm_sleep_mode(d.pop("vllm_sleep_mode", UNSET))

        world_size = d.pop("world_size", UNSET)

        execution = cls(
            device=device,
            device_name=device_name,
            gradient_checkpointing=gradient_checkpointing,
            micro_batch_size=micro_batch_size,
            precision=precision,
            precision_reason=precision_reason,
            rollout_engine=rollout_engine,
            backend=backend,
            capture_update=capture_update,
            device_total_gb=device_total_gb,
            fused_lm_head=fused_lm_head,
            max_staleness=max_staleness,
            max_tokens_per_micro_batch=max_tokens_per_micro_batch,
            packing=packing,
            pool_tenants=pool_tenants,
            pool_together=pool_together,
            ranks_per_node=ranks_per_node,
            sampler=sampler,
            sharding=sharding,
            threads=threads,
            vllm_gpu_memory_utilization=vllm_gpu_memory_utilization,
            vllm_sleep_mode=vllm_sleep_mode,
            world_size=world_size,
        )

        execution.additional_properties = d
        return execution

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
