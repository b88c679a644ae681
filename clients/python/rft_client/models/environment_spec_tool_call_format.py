# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from typing import Literal

EnvironmentSpecToolCallFormat = Literal["auto", "hermes", "llama3", "mistral"]

ENVIRONMENT_SPEC_TOOL_CALL_FORMAT_VALUES: set[EnvironmentSpecToolCallFormat] = {
    "auto",
    "hermes",
    "llama3",
    "mistral",
}


def check_environment_spec_tool_call_format(value: str) -> EnvironmentSpecToolCallFormat:
    if value in ENVIRONMENT_SPEC_TOOL_CALL_FORMAT_VALUES:
        return value
    raise TypeError(f"Unexpected value {value!r}. Expected one of {ENVIRONMENT_SPEC_TOOL_CALL_FORMAT_VALUES!r}")
