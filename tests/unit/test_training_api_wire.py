"""The training API's protobuf (api.training_api.wire) against the ``tinker`` SDK's own conversions: what the SDK
encodes, the server decodes exactly; what the server encodes, the SDK decodes to the same values."""

from __future__ import annotations

import math

import pytest
import torch
from tinker import types
from tinker.proto.request_conv import forward_backward_request_to_proto
from tinker.proto.response_conv import deserialize_forward_backward_output, deserialize_sample_response

from api.training_api import tinker_pb2, wire
from runtime.training_api import SampledSequence


def test_a_forward_backward_request_of_the_sdk_decodes_exactly() -> None:
    dense = types.Datum(
        model_input=types.ModelInput.from_ints([1, 2, 3]),
        loss_fn_inputs={"target_tokens": [2, 3, 4], "weights": [0.0, 1.0, 0.5]},
    )
    torched = types.Datum(  # torch tensors, one of them (1, N), as the SDK sends them
        model_input=types.ModelInput.from_ints([5, 6]),
        loss_fn_inputs={
            "target_tokens": torch.tensor([[6, 7]]),
            "advantages": torch.tensor([0.5, -1.0]),
            "logprobs": torch.tensor([-0.25, -2.0]),
        },
    )
    fwd = types.ForwardBackwardInput(data=[dense, torched], loss_fn="ppo", loss_fn_config={"clip_low_threshold": 0.7})
    req = types.ForwardBackwardRequest(forward_backward_input=fwd, model_id="sess-1:train:0", seq_id=3)
    got = wire.decode_forward_backward(forward_backward_request_to_proto(req).SerializeToString())
    assert (got.model_id, got.seq_id, got.loss_fn, got.forward_only) == ("sess-1:train:0", 3, "ppo", False)
    assert got.config == {"clip_low_threshold": 0.7}
    assert got.data[0] == ([1, 2, 3], {"target_tokens": [2, 3, 4], "weights": [0.0, 1.0, 0.5]})
    assert got.data[1] == ([5, 6], {"target_tokens": [6, 7], "advantages": [0.5, -1.0], "logprobs": [-0.25, -2.0]})


def test_a_body_that_is_not_the_sdks_is_refused_naming_where() -> None:
    with pytest.raises(wire.WireError) as bad:
        wire.decode_forward_backward(b"\xff\xff\xff")
    assert bad.value.param == "body"
    msg = tinker_pb2.ForwardBackwardRequest(model_id="m", loss_fn="cross_entropy")
    msg.data.add().model_input.add().image.SetInParent()
    with pytest.raises(wire.WireError, match="image chunks are not supported") as image:
        wire.decode_forward_backward(msg.SerializeToString())
    assert image.value.param == "data[0].model_input.chunks[0]"


def test_results_decode_in_the_sdk_to_what_the_worker_computed() -> None:
    out = deserialize_forward_backward_output(
        wire.encode_forward_backward([[-1.0, -2.5, -0.5], [-0.25]], {"loss:sum": 3.5, "tokens:sum": 4.0})
    )
    assert [o["logprobs"].tolist() for o in out.loss_fn_outputs] == [[-1.0, -2.5, -0.5], [-0.25]]
    assert out.metrics == {"loss:sum": 3.5, "tokens:sum": 4.0}
    sequences = [
        SampledSequence(tokens=[7, 8, 0], logprobs=[-0.5, -1.25, -0.125], stop_reason="stop"),
        SampledSequence(tokens=[9], logprobs=[-2.0], stop_reason="length"),
    ]
    sample = deserialize_sample_response(wire.encode_sample(sequences, [None, -1.5, -0.75]))
    assert [(s.tokens, s.logprobs, s.stop_reason) for s in sample.sequences] == [
        ([7, 8, 0], [-0.5, -1.25, -0.125], "stop"),
        ([9], [-2.0], "length"),
    ]
    assert sample.prompt_logprobs is not None and sample.prompt_logprobs[0] is None
    assert sample.prompt_logprobs[1:] == [-1.5, -0.75] and not any(
        isinstance(x, float) and math.isnan(x) for x in sample.prompt_logprobs[1:]
    )
