# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.completion_request_stream_options_type_0 import CompletionRequestStreamOptionsType0


T = TypeVar("T", bound="CompletionRequest")


@_attrs_define
class CompletionRequest:
    """
    Attributes:
        model (str): A base model id, a job's fine_tuned_model, a checkpoint's fine_tuned_model_checkpoint (ft:…:ckpt-
            step-N) or a checkpoint id (ftckpt-…).
        prompt (list[int] | list[list[int]] | list[str] | str): Text, texts, or token ids.
        echo (bool | None | Unset):
        frequency_penalty (float | None | Unset):
        logprobs (int | None | Unset): Log-probabilities of the k most likely tokens.
        max_tokens (int | None | Unset):
        n (int | None | Unset): Completions per prompt.
        presence_penalty (float | None | Unset):
        seed (int | None | Unset): Same seed and parameters: the same completion (best effort).
        stop (list[str] | None | str | Unset): Up to 4 sequences where the completion stops.
        stream (bool | Unset): Server-sent events, one chunk per token batch, ending with [DONE]. Default: False.
        stream_options (CompletionRequestStreamOptionsType0 | None | Unset):
        suffix (None | str | Unset):
        temperature (float | None | Unset):
        top_p (float | None | Unset):
        user (None | str | Unset):
    """

    model: str
    prompt: list[int] | list[list[int]] | list[str] | str
    echo: bool | None | Unset = UNSET
    frequency_penalty: float | None | Unset = UNSET
    logprobs: int | None | Unset = UNSET
    max_tokens: int | None | Unset = UNSET
    n: int | None | Unset = UNSET
    presence_penalty: float | None | Unset = UNSET
    seed: int | None | Unset = UNSET
    stop: list[str] | None | str | Unset = UNSET
    stream: bool | Unset = False
    stream_options: CompletionRequestStreamOptionsType0 | None | Unset = UNSET
    suffix: None | str | Unset = UNSET
    temperature: float | None | Unset = UNSET
    top_p: float | None | Unset = UNSET
    user: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.completion_request_stream_options_type_0 import CompletionRequestStreamOptionsType0  # noqa: PLC0415

        model = self.model

        prompt: list[int] | list[list[int]] | list[str] | str
        if isinstance(self.prompt, list):
            prompt = self.prompt

        elif isinstance(self.prompt, list):
            prompt = self.prompt

        elif isinstance(self.prompt, list):
            prompt = []
            for prompt_type_3_item_data in self.prompt:
                prompt_type_3_item = prompt_type_3_item_data

                prompt.append(prompt_type_3_item)

        else:
            prompt = self.prompt

        echo: bool | None | Unset
        if isinstance(self.echo, Unset):
            echo = UNSET
        else:
            echo = self.echo

        frequency_penalty: float | None | Unset
        if isinstance(self.frequency_penalty, Unset):
            frequency_penalty = UNSET
        else:
            frequency_penalty = self.frequency_penalty

        logprobs: int | None | Unset
        if isinstance(self.logprobs, Unset):
            logprobs = UNSET
        else:
            logprobs = self.logprobs

        max_tokens: int | None | Unset
        if isinstance(self.max_tokens, Unset):
            max_tokens = UNSET
        else:
            max_tokens = self.max_tokens

        n: int | None | Unset
        if isinstance(self.n, Unset):
            n = UNSET
        else:
            n = self.n

        presence_penalty: float | None | Unset
        if isinstance(self.presence_penalty, Unset):
            presence_penalty = UNSET
        else:
            presence_penalty = self.presence_penalty

        seed: int | None | Unset
        if isinstance(self.seed, Unset):
            seed = UNSET
        else:
            seed = self.seed

        stop: list[str] | None | str | Unset
        if isinstance(self.stop, Unset):
            stop = UNSET
        elif isinstance(self.stop, list):
            stop = self.stop

        else:
            stop = self.stop

        stream = self.stream

        stream_options: dict[str, Any] | None | Unset
        if isinstance(self.stream_options, Unset):
            stream_options = UNSET
        elif isinstance(self.stream_options, CompletionRequestStreamOptionsType0):
            stream_options = self.stream_options.to_dict()
        else:
            stream_options = self.stream_options

        suffix: None | str | Unset
        if isinstance(self.suffix, Unset):
            suffix = UNSET
        else:
            suffix = self.suffix

        temperature: float | None | Unset
        if isinstance(self.temperature, Unset):
            temperature = UNSET
        else:
            temperature = self.temperature

        top_p: float | None | Unset
        if isinstance(self.top_p, Unset):
            top_p = UNSET
        else:
            top_p = self.top_p

        user: None | str | Unset
        if isinstance(self.user, Unset):
            user = UNSET
        else:
            user = self.user

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "model": model,
                "prompt": prompt,
            }
        )
        if echo is not UNSET:
            field_dict["echo"] = echo
        if frequency_penalty is not UNSET:
            field_dict["frequency_penalty"] = frequency_penalty
        if logprobs is not UNSET:
            field_dict["logprobs"] = logprobs
        if max_tokens is not UNSET:
            field_dict["max_tokens"] = max_tokens
        if n is not UNSET:
            field_dict["n"] = n
        if presence_penalty is not UNSET:
            field_dict["presence_penalty"] = presence_penalty
        if seed is not UNSET:
            field_dict["seed"] = seed
        if stop is not UNSET:
            field_dict["stop"] = stop
        if stream is not UNSET:
            field_dict["stream"] = stream
        if stream_options is not UNSET:
            field_dict["stream_options"] = stream_options
        if suffix is not UNSET:
            field_dict["suffix"] = suffix
        if temperature is not UNSET:
            field_dict["temperature"] = temperature
        if top_p is not UNSET:
            field_dict["top_p"] = top_p
        if user is not UNSET:
            field_dict["user"] = user

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.completion_request_stream_options_type_0 import CompletionRequestStreamOptionsType0  # noqa: PLC0415

        d = dict(src_dict)
        model = d.pop("model")

        def _parse_prompt(data: object) -> list[int] | list[list[int]] | list[str] | str:
            try:
                if not isinstance(data, list):
                    raise TypeError()
                prompt_type_1 = cast(list[str], data)

                return prompt_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, list):
                    raise TypeError()
                prompt_type_2 = cast(list[int], data)

                return prompt_type_2
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            try:
                if not isinstance(data, list):
                    raise TypeError()
                prompt_type_3 = []
                _prompt_type_3 = data
                for prompt_type_3_item_data in _prompt_type_3:
                    prompt_type_3_item = cast(list[int], prompt_type_3_item_data)

                    prompt_type_3.append(prompt_type_3_item)

                return prompt_type_3
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[int] | list[list[int]] | list[str] | str, data)

        prompt = _parse_prompt(d.pop("prompt"))

        def _parse_echo(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        echo = _parse_echo(d.pop("echo", UNSET))

        def _parse_frequency_penalty(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        frequency_penalty = _parse_frequency_penalty(d.pop("frequency_penalty", UNSET))

        def _parse_logprobs(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        logprobs = _parse_logprobs(d.pop("logprobs", UNSET))

        def _parse_max_tokens(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens = _parse_max_tokens(d.pop("max_tokens", UNSET))

        def _parse_n(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        n = _parse_n(d.pop("n", UNSET))

        def _parse_presence_penalty(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        presence_penalty = _parse_presence_penalty(d.pop("presence_penalty", UNSET))

        def _parse_seed(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        seed = _parse_seed(d.pop("seed", UNSET))

        def _parse_stop(data: object) -> list[str] | None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                stop_type_1 = cast(list[str], data)

                return stop_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[str] | None | str | Unset, data)

        stop = _parse_stop(d.pop("stop", UNSET))

        stream = d.pop("stream", UNSET)

        def _parse_stream_options(data: object) -> CompletionRequestStreamOptionsType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                stream_options_type_0 = CompletionRequestStreamOptionsType0.from_dict(data)

                return stream_options_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CompletionRequestStreamOptionsType0 | None | Unset, data)

        stream_options = _parse_stream_options(d.pop("stream_options", UNSET))

        def _parse_suffix(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        suffix = _parse_suffix(d.pop("suffix", UNSET))

        def _parse_temperature(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        temperature = _parse_temperature(d.pop("temperature", UNSET))

        def _parse_top_p(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        top_p = _parse_top_p(d.pop("top_p", UNSET))

        def _parse_user(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        user = _parse_user(d.pop("user", UNSET))

        completion_request = cls(
            model=model,
            prompt=prompt,
            echo=echo,
            frequency_penalty=frequency_penalty,
            logprobs=logprobs,
            max_tokens=max_tokens,
            n=n,
            presence_penalty=presence_penalty,
            seed=seed,
            stop=stop,
            stream=stream,
            stream_options=stream_options,
            suffix=suffix,
            temperature=temperature,
            top_p=top_p,
            user=user,
        )

        completion_request.additional_properties = d
        return completion_request

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
