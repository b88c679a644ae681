"""The protobuf half of the ``tinker`` SDK's protocol: a ``forward_backward`` request comes in as protobuf, and the
results of forward/backward and sample futures go out as protobuf (the SDK refuses them as JSON).

The messages are declared here, field by field, as the SDK's ``tinker_public`` package (proto3) numbers them
(docs/architecture/tinker-protocol.md, §4), and built into a descriptor pool of our own at import: no generated
code, no ``protoc``, and only the messages and fields this server reads or writes (a field we do not declare is
kept as an unknown field and ignored, so ``image`` and ``dmel`` chunks arrive as empty messages and are refused).

Byte arrays are little-endian: tokens int32, floats float32, CSR indices int64 (the SDK writes numpy
``tobytes()``).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_PACKAGE = "tinker_public"
_F = descriptor_pb2.FieldDescriptorProto
# (name, number, type, label, message/enum type or None, oneof name or None, proto3 optional)
_Field = tuple[str, int, int, int, str | None, str | None, bool]
_ONE, _MANY = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
DTYPE_FLOAT32, DTYPE_INT64, DTYPE_INT32, DTYPE_BFLOAT16 = 1, 2, 3, 4
STOP_REASON = {"stop": 0, "length": 1}


def _f(
    name: str,
    number: int,
    kind: int,
    label: int = _ONE,
    ref: str | None = None,
    oneof: str | None = None,
    optional: bool = False,
) -> _Field:
    return (name, number, kind, label, ref, oneof, optional)


_B, _S, _I32, _I64, _U32, _D, _BOOL, _MSG, _ENUM = (
    _F.TYPE_BYTES,
    _F.TYPE_STRING,
    _F.TYPE_INT32,
    _F.TYPE_INT64,
    _F.TYPE_UINT32,
    _F.TYPE_DOUBLE,
    _F.TYPE_BOOL,
    _F.TYPE_MESSAGE,
    _F.TYPE_ENUM,
)

_MESSAGES: dict[str, list[_Field]] = {
    "EncodedTextChunk": [_f("tokens", 1, _B)],
    "ImageChunk": [],
    "DmelChunk": [],
    "Chunk": [
        _f("encoded_text", 1, _MSG, ref="EncodedTextChunk", oneof="chunk"),
        _f("image", 2, _MSG, ref="ImageChunk", oneof="chunk"),
        _f("dmel", 3, _MSG, ref="DmelChunk", oneof="chunk"),
    ],
    "SparseCsr": [_f("values", 1, _B), _f("crow_indices", 2, _B), _f("col_indices", 3, _B)],
    "Tensor": [
        _f("dense", 1, _B, oneof="encoding"),
        _f("sparse_csr", 2, _MSG, ref="SparseCsr", oneof="encoding"),
        _f("dtype", 3, _ENUM, ref="DType"),
        _f("shape", 4, _I64, _MANY),
    ],
    "LossConfigValue": [_f("number", 1, _D, oneof="value"), _f("text", 2, _S, oneof="value")],
    "Datum": [
        _f("model_input", 1, _MSG, _MANY, "Chunk"),
        _f("loss_fn_inputs", 2, _MSG, _MANY, "Datum.LossFnInputsEntry"),
    ],
    "ForwardBackwardRequest": [
        _f("model_id", 1, _S),
        _f("seq_id", 2, _I32),
        _f("data", 3, _MSG, _MANY, "Datum"),
        _f("loss_fn", 4, _S),
        _f("loss_fn_config", 5, _MSG, _MANY, "ForwardBackwardRequest.LossFnConfigEntry"),
        _f("forward_only", 6, _BOOL),
        _f("loss_fn_config_v2", 7, _MSG, _MANY, "ForwardBackwardRequest.LossFnConfigV2Entry"),
    ],
    "BatchedTensor": [
        _f("data", 1, _B),
        _f("offsets", 2, _B),
        _f("dtype", 3, _ENUM, ref="DType"),
        _f("trailing_shape", 4, _I64, _MANY),
    ],
    "ArrayRecord": [
        _f("type_tag", 1, _S),
        _f("fields", 2, _MSG, _MANY, "ArrayRecord.FieldsEntry"),
        _f("num_datums", 3, _I64),
    ],
    "ForwardBackwardOutput": [
        _f("loss_fn_output_type", 1, _S),
        _f("loss_fn_outputs", 2, _MSG, _MANY, "ArrayRecord"),
        _f("metrics", 3, _MSG, _MANY, "ForwardBackwardOutput.MetricsEntry"),
    ],
    "SampledSequence": [
        _f("stop_reason", 1, _ENUM, ref="StopReason"),
        _f("tokens", 2, _B),
        _f("logprobs", 3, _B, optional=True),
    ],
    "SampleResponse": [
        _f("sequences", 1, _MSG, _MANY, "SampledSequence"),
        _f("prompt_logprobs", 2, _B, optional=True),
        _f("prompt_cache_hit_tokens", 4, _I32),
    ],
}
# map<key, value> fields: proto3 spells them as a nested "…Entry" message with map_entry set
_MAPS: dict[str, tuple[int, str | None]] = {
    "Datum.LossFnInputsEntry": (_MSG, "Tensor"),
    "ForwardBackwardRequest.LossFnConfigEntry": (_D, None),
    "ForwardBackwardRequest.LossFnConfigV2Entry": (_MSG, "LossConfigValue"),
    "ArrayRecord.FieldsEntry": (_MSG, "BatchedTensor"),
    "ForwardBackwardOutput.MetricsEntry": (_D, None),
}
_ENUMS = {
    "DType": ["DTYPE_UNSPECIFIED", "DTYPE_FLOAT32", "DTYPE_INT64", "DTYPE_INT32", "DTYPE_BFLOAT16"],
    "StopReason": ["STOP_REASON_STOP", "STOP_REASON_LENGTH"],
}


def _add_field(msg: descriptor_pb2.DescriptorProto, spec: _Field, oneofs: dict[str, int]) -> None:
    name, number, kind, label, ref, oneof, optional = spec
    field = msg.field.add(name=name, number=number, type=kind, label=label)
    if ref is not None:
        field.type_name = f".{_PACKAGE}.{ref}"
    if optional:  # proto3 `optional`: a synthetic one-field oneof, so presence is tracked
        oneof = f"_{name}"
        field.proto3_optional = True
    if oneof is not None:
        if oneof not in oneofs:
            oneofs[oneof] = len(msg.oneof_decl)
            msg.oneof_decl.add(name=oneof)
        field.oneof_index = oneofs[oneof]


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="rft_tinker_public.proto", package=_PACKAGE, syntax="proto3")
    for enum_name, values in _ENUMS.items():
        enum = fd.enum_type.add(name=enum_name)
        for number, value in enumerate(values):
            enum.value.add(name=value, number=number)
    for name, fields in _MESSAGES.items():
        msg = fd.message_type.add(name=name)
        oneofs: dict[str, int] = {}
        for spec in fields:
            _add_field(msg, spec, oneofs)
        for entry_name, (kind, ref) in _MAPS.items():
            owner, _, entry = entry_name.partition(".")
            if owner == name:
                nested = msg.nested_type.add(name=entry)
                nested.options.map_entry = True
                _add_field(nested, _f("key", 1, _S), {})
                _add_field(nested, _f("value", 2, kind, ref=ref), {})
    return fd


_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())


def _cls(name: str) -> Any:
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


ForwardBackwardRequestPb = _cls("ForwardBackwardRequest")
ForwardBackwardOutputPb = _cls("ForwardBackwardOutput")
SampleResponsePb = _cls("SampleResponse")


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


def _tensor(t: Any, param: str) -> list[float]:
    """A Tensor message as a flat list (CSR expanded to its dense shape, missing cells 0)."""
    fmt, size = {DTYPE_FLOAT32: ("f", 4), DTYPE_INT64: ("q", 8), DTYPE_INT32: ("i", 4)}.get(t.dtype, ("", 0))
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

    msg = ForwardBackwardRequestPb()
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
    out = ForwardBackwardOutputPb(loss_fn_output_type="ArrayRecord")
    record = out.loss_fn_outputs.add(type_tag="ArrayRecord", num_datums=len(logprobs))
    offsets, data = [0], bytearray()
    for row in logprobs:
        data += _floats(row)
        offsets.append(len(data))
    field = record.fields["logprobs"]
    field.data = bytes(data)
    field.offsets = struct.pack(f"<{len(offsets)}q", *offsets)
    field.dtype = DTYPE_FLOAT32
    for k, v in metrics.items():
        out.metrics[k] = math.nan if v is None else float(v)  # JSON carried a non-finite number as null
    return bytes(out.SerializeToString())


def _floats(values: list[float | None]) -> bytes:
    """float32 bytes; None (a position without a value, or a non-finite number that JSON carried as null) as NaN."""
    return struct.pack(f"<{len(values)}f", *(math.nan if v is None else v for v in values))


def encode_sample(sequences: list[dict[str, Any]], prompt_logprobs: list[float | None] | None) -> bytes:
    """A SampleResponse: each sequence's tokens (int32), log-probs (float32) and stop reason; the prompt's
    log-probs with NaN where there is none (position 0), which the SDK reads back as None."""
    out = SampleResponsePb()
    for s in sequences:
        seq = out.sequences.add(stop_reason=STOP_REASON[s["stop_reason"]])
        seq.tokens = struct.pack(f"<{len(s['tokens'])}i", *s["tokens"])
        if s.get("logprobs") is not None:
            seq.logprobs = _floats(s["logprobs"])
    if prompt_logprobs is not None:
        out.prompt_logprobs = _floats(prompt_logprobs)
    return bytes(out.SerializeToString())
