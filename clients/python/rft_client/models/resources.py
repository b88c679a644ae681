# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="Resources")


@_attrs_define
class Resources:
    """What one job trains on: ``nodes`` machines, each running ``devices`` training processes (ranks) under
    torchrun: one per GPU on a GPU worker, CPU processes on a CPU worker; ``rollout_devices`` of a node's devices may
    go to the sampler instead. World size = (devices - rollout_devices) × nodes.

        Attributes:
            devices (int | Unset): Training processes per node: one per GPU on a GPU worker (limit: MAX_DEVICES_PER_NODE).
                Default: 1.
            nodes (int | Unset): Machines the job spans (limit: MAX_NODES): the worker that claims the job is node 0, the
                others join its rendezvous. Default: 1.
            rollout_devices (int | Unset): Of the node's devices, how many the sampler takes for itself (disaggregated
                sampling; needs hyperparameters.max_staleness >= 1 and one node): it samples the coming batches there while the
                other devices train. On a GPU worker the sampler's own GPU; on a CPU worker that share of the cores. 0: the
                sampler shares the training device. Default: 0.
    """

    devices: int | Unset = 1
    nodes: int | Unset = 1
    rollout_devices: int | Unset = 0

    def to_dict(self) -> dict[str, Any]:
        devices = self.devices

        nodes = self.nodes

        rollout_devices = self.rollout_devices

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if devices is not UNSET:
            field_dict["devices"] = devices
        if nodes is not UNSET:
            field_dict["nodes"] = nodes
        if rollout_devices is not UNSET:
            field_dict["rollout_devices"] = rollout_devices

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        devices = d.pop("devices", UNSET)

        nodes = d.pop("nodes", UNSET)

        rollout_devices = d.pop("rollout_devices", UNSET)

        resources = cls(
            devices=devices,
            nodes=nodes,
            rollout_devices=rollout_devices,
        )

        return resources
