# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

T = TypeVar("T", bound="PythonGrader")


@_attrs_define
class PythonGrader:
    """User Python source defining ``grade(sample, item) -> float`` or ``reward(prompt, completion, **row)``.

    ``sample`` is ``{"output_text": str, "output_json": object|None}``; ``item`` is the dataset row. The source runs
    in a sandboxed process (grpo_core.rewards.python_runner), never inside the trainer. Returning None means
    "not applicable to this sample" (TRL's rule: left out of the advantages); raising, timing out or returning a
    non-number scores 0 and counts as an error (OpenAI's rule).

        Attributes:
            source (str): Python source defining grade(sample, item) or reward(prompt, completion).
            image_tag (None | str | Unset): Accepted for OpenAI compatibility; the sandbox image is ours.
            name (str | Unset):  Default: 'python'.
            timeout_seconds (float | Unset): Wall-clock limit per batch of samples. Default: 30.0.
            type_ (Literal['python'] | Unset):  Default: 'python'.
    """

    source: str
    image_tag: None | str | Unset = UNSET
    name: str | Unset = "python"
    timeout_seconds: float | Unset = 30.0
    type_: Literal["python"] | Unset = "python"

    def to_dict(self) -> dict[str, Any]:
        source = self.source

        image_tag: None | str | Unset
        if isinstance(self.image_tag, Unset):
            image_tag = UNSET
        else:
            image_tag = self.image_tag

        name = self.name

        timeout_seconds = self.timeout_seconds

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "source": source,
            }
        )
        if image_tag is not UNSET:
            field_dict["image_tag"] = image_tag
        if name is not UNSET:
            field_dict["name"] = name
        if timeout_seconds is not UNSET:
            field_dict["timeout_seconds"] = timeout_seconds
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        source = d.pop("source")

        def _parse_image_tag(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        image_tag = _parse_image_tag(d.pop("image_tag", UNSET))

        name = d.pop("name", UNSET)

        timeout_seconds = d.pop("timeout_seconds", UNSET)

        type_ = cast(Literal["python"] | Unset, d.pop("type", UNSET))
        if type_ != "python" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'python', got '{type_}'")

        python_grader = cls(
            source=source,
            image_tag=image_tag,
            name=name,
            timeout_seconds=timeout_seconds,
            type_=type_,
        )

        return python_grader
