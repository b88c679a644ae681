# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.score_model_grader_input_item import ScoreModelGraderInputItem
    from ..models.score_model_grader_sampling_params import ScoreModelGraderSamplingParams


T = TypeVar("T", bound="ScoreModelGrader")


@_attrs_define
class ScoreModelGrader:
    """An LLM judge (OpenAI's score_model): the rendered ``input`` messages go to ``model`` on the operator's
    OpenAI-compatible endpoint, or on the grader's own ``endpoint`` (our extension: a team keeps judging with the
    model it used at OpenAI, or with one this service serves); the first number in the reply, clipped to
    ``range``, is the score. Without ``endpoint`` the spec is exactly OpenAI's: an unset field is not dumped.

        Attributes:
            input_ (list[ScoreModelGraderInputItem]): Chat messages; content may use templates.
            model (str):
            api_key_secret (None | str | Unset): The name of a secret of the job's project (POST /v1/secrets) holding the
                endpoint's key, sent as 'Authorization: Bearer'. Needs endpoint (the service's judge has its own key); unset: no
                key is sent.
            endpoint (None | str | Unset): An OpenAI-compatible base URL, e.g. https://api.openai.com/v1: the judge is POST
                {endpoint}/chat/completions. Unset: the service's judge (JUDGE_BASE_URL).
            name (str | Unset):  Default: 'score_model'.
            range_ (list[float] | Unset):
            sampling_params (ScoreModelGraderSamplingParams | Unset):
            type_ (Literal['score_model'] | Unset):  Default: 'score_model'.
    """

    input_: list[ScoreModelGraderInputItem]
    model: str
    api_key_secret: None | str | Unset = UNSET
    endpoint: None | str | Unset = UNSET
    name: str | Unset = "score_model"
    range_: list[float] | Unset = UNSET
    sampling_params: ScoreModelGraderSamplingParams | Unset = UNSET
    type_: Literal["score_model"] | Unset = "score_model"

    def to_dict(self) -> dict[str, Any]:
        input_ = []
        for input_item_data in self.input_:
            input_item = input_item_data.to_dict()
            input_.append(input_item)

        model = self.model

        api_key_secret: None | str | Unset
        if isinstance(self.api_key_secret, Unset):
            api_key_secret = UNSET
        else:
            api_key_secret = self.api_key_secret

        endpoint: None | str | Unset
        if isinstance(self.endpoint, Unset):
            endpoint = UNSET
        else:
            endpoint = self.endpoint

        name = self.name

        range_: list[float] | Unset = UNSET
        if not isinstance(self.range_, Unset):
            range_ = []
            for range_item_data in self.range_:
                range_item: float
                range_item = range_item_data
                range_.append(range_item)

        sampling_params: dict[str, Any] | Unset = UNSET
        if not isinstance(self.sampling_params, Unset):
            sampling_params = self.sampling_params.to_dict()

        type_ = self.type_

        field_dict: dict[str, Any] = {}

        field_dict.update(
            {
                "input": input_,
                "model": model,
            }
        )
        if api_key_secret is not UNSET:
            field_dict["api_key_secret"] = api_key_secret
        if endpoint is not UNSET:
            field_dict["endpoint"] = endpoint
        if name is not UNSET:
            field_dict["name"] = name
        if range_ is not UNSET:
            field_dict["range"] = range_
        if sampling_params is not UNSET:
            field_dict["sampling_params"] = sampling_params
        if type_ is not UNSET:
            field_dict["type"] = type_

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.score_model_grader_input_item import ScoreModelGraderInputItem  # noqa: PLC0415
        from ..models.score_model_grader_sampling_params import ScoreModelGraderSamplingParams  # noqa: PLC0415

        d = dict(src_dict)
        input_ = []
        _input_ = d.pop("input")
        for input_item_data in _input_:
            input_item = ScoreModelGraderInputItem.from_dict(input_item_data)

            input_.append(input_item)

        model = d.pop("model")

        def _parse_api_key_secret(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        api_key_secret = _parse_api_key_secret(d.pop("api_key_secret", UNSET))

        def _parse_endpoint(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        endpoint = _parse_endpoint(d.pop("endpoint", UNSET))

        name = d.pop("name", UNSET)

        _range_ = d.pop("range", UNSET)
        range_: list[float] | Unset = UNSET
        if _range_ is not UNSET:
            range_ = []
            for range_item_data in _range_:

                def _parse_range_item(data: object) -> float:
                    return cast(float, data)

                range_item = _parse_range_item(range_item_data)

                range_.append(range_item)

        _sampling_params = d.pop("sampling_params", UNSET)
        sampling_params: ScoreModelGraderSamplingParams | Unset
        if isinstance(_sampling_params, Unset):
            sampling_params = UNSET
        else:
            sampling_params = ScoreModelGraderSamplingParams.from_dict(_sampling_params)

        type_ = cast(Literal["score_model"] | Unset, d.pop("type", UNSET))
        if type_ != "score_model" and not isinstance(type_, Unset):
            raise ValueError(f"type must match const 'score_model', got '{type_}'")

        score_model_grader = cls(
            input_=input_,
            model=model,
            api_key_secret=api_key_secret,
            endpoint=endpoint,
            name=name,
            range_=range_,
            sampling_params=sampling_params,
            type_=type_,
        )

        return score_model_grader
