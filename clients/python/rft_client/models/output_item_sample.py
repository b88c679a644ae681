# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.eval_error import EvalError
    from ..models.output_item_sample_input_item import OutputItemSampleInputItem
    from ..models.output_item_sample_output_item import OutputItemSampleOutputItem
    from ..models.output_item_sample_usage import OutputItemSampleUsage


T = TypeVar("T", bound="OutputItemSample")


@_attrs_define
class OutputItemSample:
    """
    Attributes:
        error (EvalError | None):
        finish_reason (str):
        input_ (list[OutputItemSampleInputItem]):
        max_completion_tokens (int):
        model (str):
        output (list[OutputItemSampleOutputItem]):
        seed (int):
        temperature (float):
        top_p (float):
        usage (OutputItemSampleUsage):
    """

    error: EvalError | None
    finish_reason: str
    input_: list[OutputItemSampleInputItem]
    max_completion_tokens: int
    model: str
    output: list[OutputItemSampleOutputItem]
    seed: int
    temperature: float
    top_p: float
    usage: OutputItemSampleUsage
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.eval_error import EvalError  # noqa: PLC0415

        error: dict[str, Any] | None
        if isinstance(self.error, EvalError):
            error = self.error.to_dict()
        else:
            error = self.error

        finish_reason = self.finish_reason

        input_ = []
        for input_item_data in self.input_:
            input_item = input_item_data.to_dict()
            input_.append(input_item)

        max_completion_tokens = self.max_completion_tokens

        model = self.model

        output = []
        for output_item_data in self.output:
            output_item = output_item_data.to_dict()
            output.append(output_item)

        seed = self.seed

        temperature = self.temperature

        top_p = self.top_p

        usage = self.usage.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "error": error,
                "finish_reason": finish_reason,
                "input": input_,
                "max_completion_tokens": max_completion_tokens,
                "model": model,
                "output": output,
                "seed": seed,
                "temperature": temperature,
                "top_p": top_p,
                "usage": usage,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.eval_error import EvalError  # noqa: PLC0415
        from ..models.output_item_sample_input_item import OutputItemSampleInputItem  # noqa: PLC0415
        from ..models.output_item_sample_output_item import OutputItemSampleOutputItem  # noqa: PLC0415
        from ..models.output_item_sample_usage import OutputItemSampleUsage  # noqa: PLC0415

        d = dict(src_dict)

        def _parse_error(data: object) -> EvalError | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = EvalError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EvalError | None, data)

        error = _parse_error(d.pop("error"))

        finish_reason = d.pop("finish_reason")

        input_ = []
        _input_ = d.pop("input")
        for input_item_data in _input_:
            input_item = OutputItemSampleInputItem.from_dict(input_item_data)

            input_.append(input_item)

        max_completion_tokens = d.pop("max_completion_tokens")

        model = d.pop("model")

        output = []
        _output = d.pop("output")
        for output_item_data in _output:
            output_item = OutputItemSampleOutputItem.from_dict(output_item_data)

            output.append(output_item)

        seed = d.pop("seed")

        temperature = d.pop("temperature")

        top_p = d.pop("top_p")

        usage = OutputItemSampleUsage.from_dict(d.pop("usage"))

        output_item_sample = cls(
            error=error,
            finish_reason=finish_reason,
            input_=input_,
            max_completion_tokens=max_completion_tokens,
            model=model,
            output=output,
            seed=seed,
            temperature=temperature,
            top_p=top_p,
            usage=usage,
        )

        output_item_sample.additional_properties = d
        return output_item_sample

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
