"""The protobuf half of the ``tinker`` SDK's protocol: a ``forward_backward`` request comes in as protobuf, and the
results of forward/backward and sample futures go out as protobuf (the SDK refuses them as JSON).

The messages are ``tinker.proto`` beside this file (the SDK's ``tinker_public`` messages this server reads or writes,
numbered as the SDK numbers them: docs/architecture/tinker-protocol.md, §4), compiled into the committed
``tinker_pb2`` (``make proto``; ``make check-proto`` fails on drift). A field the SDK sends and the ``.proto`` does not
declare is kept as an unknown field and ignored, so ``image`` and ``dmel`` chunks arrive as empty messages and are
refused.

Byte arrays are little-endian: tokens int32, floats float32, CSR indices int64 (the SDK writes numpy
``tobytes()``).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

from api.training_api import tinker_pb2 as pb
from runtime.training_api import SampledSequence

STOP_REASON = {"stop": pb.STOP_REASON_STOP, "length": pb.STOP_REASON_LENGTH}


class WireError(ValueError):
    """A request body that is not what the SDK sends; ``param`` names where."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


@dataclass(frozen=True)
class FwdBwdIn:
    model_id: str
    seq_id: int
    loss_fn: str
    config: dict[str, float]
    forward_only: bool
    data: list[tuple[list[int], dict[str, list[float]]]]  # (tokens, loss_fn_inputs) per datum


def _unpack(raw: bytes, fmt: str, size: int, param: str) -> list[Any]:
    if len(raw) % size:
        raise WireError(param, f"{len(raw)} bytes is not a whole number of {size}-byte values")
    return list(struct.unpack(f"<{len(raw) // size}{fmt}", raw))


def _tensor(t: pb.Tensor, param: str) -> list[float]:
    """A Tensor message as a flat list (CSR expanded to its dense shape, missing cells 0)."""
    fmt, size = {pb.DTYPE_FLOAT32: ("f", 4), pb.DTYPE_INT64: ("q", 8), pb.DTYPE_INT32: ("i", 4)}.get(t.dtype, ("", 0))
    if not fmt:
        raise WireError(param, f"unsupported tensor dtype {t.dtype} (float32, int64 or int32)")
    shape = list(t.shape)
    which = t.WhichOneof("encoding")
    if which == "dense":
        values = _unpack(t.dense, fmt, size, param)
        if shape and math.prod(shape) != len(values):
            raise WireError(param, f"shape {shape} does not hold {len(values)} values")
        if sum(n != 1 for n in shape) > 1:
            raise WireError(param, f"shape {shape}: loss inputs are one value per token ([N] or [1, N])")
        return values
    if which == "sparse_csr":
        if len(shape) != 2 or shape[0] != 1:
            raise WireError(param, f"a sparse loss input must have shape [1, N], not {shape}")
        vals = _unpack(t.sparse_csr.values, fmt, size, param)
        cols = _unpack(t.sparse_csr.col_indices, "q", 8, param)
        dense: list[float] = [0] * shape[1]
        for c, v in zip(cols, vals, strict=True):
            if not 0 <= c < shape[1]:
                raise WireError(param, f"column {c} is outside shape {shape}")
            dense[c] = v
        return dense
    return []


def decode_forward_backward(body: bytes) -> FwdBwdIn:
    """A ``forward_backward`` request body (protobuf ForwardBackwardRequest), or WireError naming what is wrong."""
    from google.protobuf.message import DecodeError

    msg = pb.ForwardBackwardRequest()
    try:
        msg.ParseFromString(body)
    except DecodeError as exc:
        raise WireError("body", f"not a protobuf ForwardBackwardRequest: {exc}") from None
    data = []
    for i, d in enumerate(msg.data):
        tokens: list[int] = []
        for j, chunk in enumerate(d.model_input):
            kind = chunk.WhichOneof("chunk")
            if kind != "encoded_text":
                raise WireError(f"data[{i}].model_input.chunks[{j}]", f"{kind} chunks are not supported (text only)")
            tokens += _unpack(chunk.encoded_text.tokens, "i", 4, f"data[{i}].model_input.chunks[{j}]")
        inputs = {k: _tensor(v, f"data[{i}].loss_fn_inputs.{k}") for k, v in d.loss_fn_inputs.items()}
        data.append((tokens, inputs))
    config = dict(msg.loss_fn_config)
    for key, value in msg.loss_fn_config_v2.items():
        if value.WhichOneof("value") == "text":
            raise WireError(f"loss_fn_config.{key}", "text values are not supported (numbers only)")
        config[key] = value.number
    return FwdBwdIn(msg.model_id, msg.seq_id, msg.loss_fn, config, msg.forward_only, data)


def encode_forward_backward(logprobs: list[list[float | None]], metrics: dict[str, float | None]) -> bytes:
    """A ForwardBackwardOutput: one ArrayRecord whose ``logprobs`` field holds each datum's per-token log-probs
    (float32, concatenated, with byte offsets per datum), and the metrics (``name:reduction`` keys)."""
    out = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord")
    record = out.loss_fn_outputs.add(type_tag="ArrayRecord", num_datums=len(logprobs))
    offsets, data = [0], bytearray()
    for row in logprobs:
        data += _floats(row)
        offsets.append(len(data))
    field = record.fields["logprobs"]
    field.data = bytes(data)
    field.offsets = struct.pack(f"<{len(offsets)}q", *offsets)
    field.dtype = pb.DTYPE_FLOAT32
    for k, v in metrics.items():
        out.metrics[k] = math.nan if v is None else float(v)  # JSON carried a non-finite number as null
    return bytes(out.SerializeToString())


def _floats(values: list[float | None]) -> bytes:
    """float32 bytes; None (a position without a value, or a non-finite number that JSON carried as null) as NaN."""
    return struct.pack(f"<{len(values)}f", *(math.nan if v is None else v for v in values))


def encode_sample(sequences: list[SampledSequence], prompt_logprobs: list[float | None] | None) -> bytes:
    """A SampleResponse: each sequence's tokens (int32), log-probs (float32) and stop reason; the prompt's
    log-probs with NaN where there is none (position 0), which the SDK reads back as None."""
    out = pb.SampleResponse()
    for s in sequences:
        seq = out.sequences.add(stop_reason=STOP_REASON[s.stop_reason])
        seq.tokens = struct.pack(f"<{len(s.tokens)}i", *s.tokens)
        if s.logprobs is not None:
            seq.logprobs = _floats(s.logprobs)
    if prompt_logprobs is not None:
        out.prompt_logprobs = _floats(prompt_logprobs)
    return bytes(out.SerializeToString())
