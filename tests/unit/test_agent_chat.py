"""Tool conversations as chat templates render them, the tokens between turns, and tool-call parsing."""

# ruff: noqa: E501  (templates and model outputs stay on one line, as the model sees them)

from __future__ import annotations

import json
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from grpo_core.data.chat import ChatError, ChatFormat, content_text, detect_format
from grpo_core.rollout.agent.toolcalls import parse_turn, schemas_from_signatures

# SmolLM2-135M-Instruct's template, verbatim: it ignores `tools` and prints any role.
SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# The shape of Qwen 2.5's: tools in the system turn, calls in <tool_call> tags, results in <tool_response> tags.
QWEN_LIKE = """{%- if tools %}<|im_start|>system
# Tools
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>
For each function call, return <tool_call>{"name": ..., "arguments": ...}</tool_call><|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == "assistant" %}<|im_start|>assistant
{{ message.content }}
{%- for tc in message.tool_calls or [] %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {{ tc.function.arguments }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == "tool" %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""
# The shape of Llama 3.1's: bare JSON calls with "parameters", results in an ipython turn.
LLAMA_LIKE = """<|begin_of_text|>
{%- if tools %}<|start_header_id|>system<|end_header_id|>

Respond with {"name": function name, "parameters": dictionary of argument name and its value}.
{% for t in tools %}{{ t | tojson }}
{% endfor %}<|eot_id|>
{%- endif %}
{%- for message in messages %}
{%- if message.role == "tool" %}<|start_header_id|>ipython<|end_header_id|>

{{ message.content }}<|eot_id|>
{%- elif message.tool_calls %}<|start_header_id|>assistant<|end_header_id|>

{%- for tc in message.tool_calls %}{"name": "{{ tc.function.name }}", "parameters": {{ tc.function.arguments }}}{% endfor %}<|eot_id|>
{%- else %}<|start_header_id|>{{ message.role }}<|end_header_id|>

{{ message.content }}<|eot_id|>
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>

{% endif %}"""
# A template that accepts only user/assistant turns (Gemma-like): tool results must go as user turns.
STRICT = """{%- for m in messages %}{% if m.role not in ["user", "assistant", "system"] %}{{ raise_exception("bad role") }}{% endif %}<start_of_turn>{{ m.role }}
{{ m.content }}<end_of_turn>
{% endfor %}{% if add_generation_prompt %}<start_of_turn>assistant
{% endif %}"""

CALC = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate arithmetic.",
        "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
    },
}


def renderer(template: str) -> Any:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, **kw: json.dumps(x)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    compiled = env.from_string(template)

    def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, gen: bool) -> str:
        return str(compiled.render(messages=messages, tools=tools, add_generation_prompt=gen))

    return render


def test_formats_are_read_from_the_templates() -> None:
    assert detect_format(SMOLLM2) == "hermes"  # no tool syntax of its own: our Hermes prompt
    assert detect_format(QWEN_LIKE) == "hermes"
    assert detect_format(LLAMA_LIKE) == "llama3"
    assert detect_format("{{ '[TOOL_CALLS]' }}") == "mistral"
    assert ChatFormat(renderer(QWEN_LIKE), QWEN_LIKE).native_tools
    assert not ChatFormat(renderer(SMOLLM2), SMOLLM2).native_tools


def test_smollm2_gets_the_tools_as_a_system_message_and_earlier_calls_as_text() -> None:
    chat = ChatFormat(renderer(SMOLLM2), SMOLLM2)
    call = {"id": "c0", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "2+2"}'}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "What is "}, {"type": "text", "text": "2+2?"}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "4"},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?"},
    ]
    text = chat.prompt(messages, [CALC])
    assert text.startswith("<|im_start|>system\nYou can call functions")
    assert '"name": "calculator"' in text and "SmolLM" not in text  # our system turn replaces the default one
    assert "<|im_start|>user\nWhat is 2+2?<|im_end|>" in text  # content parts joined
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+2"}}\n' in text
    assert "<|im_start|>tool\n4<|im_end|>\n<|im_start|>assistant\n4<|im_end|>" in text
    assert text.endswith("<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n")


def test_tokens_between_turns_follow_each_template() -> None:
    tool = [{"role": "tool", "tool_call_id": "c0", "name": "calculator", "content": "391"}]
    smol = ChatFormat(renderer(SMOLLM2), SMOLLM2)
    # the model stopped at <|im_end|>: the template's "\n" after it, the tool turn, the next assistant header
    assert (
        smol.between_turns(tool, None, ["<|im_end|>"]) == "\n<|im_start|>tool\n391<|im_end|>\n<|im_start|>assistant\n"
    )
    qwen = ChatFormat(renderer(QWEN_LIKE), QWEN_LIKE)
    assert qwen.between_turns(tool, [CALC], ["<|im_end|>"]) == (
        "\n<|im_start|>user\n<tool_response>\n391\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    llama = ChatFormat(renderer(LLAMA_LIKE), LLAMA_LIKE)
    assert llama.between_turns(tool, [CALC], ["<|eot_id|>", "<|eom_id|>"]) == (
        "<|start_header_id|>ipython<|end_header_id|>\n\n391<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    strict = ChatFormat(renderer(STRICT), STRICT)
    assert strict.tool_role() == "user"
    assert strict.between_turns(tool, None, ["<end_of_turn>"]) == (
        "\n<start_of_turn>user\n<tool_response>\n391\n</tool_response><end_of_turn>\n<start_of_turn>assistant\n"
    )
    user = [{"role": "user", "content": "Try again."}]
    assert (
        smol.between_turns(user, None, ["<|im_end|>"])
        == "\n<|im_start|>user\nTry again.<|im_end|>\n<|im_start|>assistant\n"
    )


def test_a_template_that_rewrites_history_is_refused() -> None:
    # renders the last message only differently: an earlier turn's text changes once another follows
    template = "{% for m in messages %}{{ m.role }}{% if loop.last %}!{% endif %}: {{ m.content }}\n{% endfor %}"
    chat = ChatFormat(renderer(template), template)
    with pytest.raises(ChatError, match="renders an earlier turn differently"):
        chat.between_turns([{"role": "tool", "content": "1"}], None, [])


def test_content_parts() -> None:
    assert content_text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "ab"
    assert content_text(None) == ""
    with pytest.raises(ChatError, match="image_url"):
        content_text([{"type": "image_url", "image_url": {"url": "x"}}])


TOOLS = [CALC, {"type": "function", "function": {"name": "today", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        (
            "hermes",
            'Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "17*23"}}\n</tool_call>',
        ),
        ("llama3", '<|python_tag|>{"name": "calculator", "parameters": {"expression": "17*23"}}'),
        ("mistral", 'Let me compute.[TOOL_CALLS][{"name": "calculator", "arguments": {"expression": "17*23"}}]'),
    ],
)
def test_calls_are_parsed_in_each_format(fmt: Any, text: str) -> None:
    turn = parse_turn(text, fmt, TOOLS, "call_0")
    assert turn.errors == []
    assert [c["function"]["name"] for c in turn.calls] == ["calculator"]
    assert json.loads(turn.calls[0]["function"]["arguments"]) == {"expression": "17*23"}
    assert turn.calls[0]["parsed_arguments"] == {"expression": "17*23"} and turn.calls[0]["id"] == "call_0-0"
    assert turn.content == ("" if fmt == "llama3" else "Let me compute.")


def test_several_calls_and_plain_answers() -> None:
    text = '<tool_call>{"name": "today", "arguments": {}}</tool_call><tool_call>{"name": "calculator", "arguments": "{\\"expression\\": \\"1+1\\"}"}</tool_call>'
    turn = parse_turn(text, "hermes", TOOLS, "c")
    assert [c["function"]["name"] for c in turn.calls] == ["today", "calculator"] and not turn.errors
    assert turn.calls[1]["parsed_arguments"] == {"expression": "1+1"}  # arguments as a JSON string are accepted
    plain = parse_turn("The answer is 391.", "hermes", TOOLS, "c")
    assert plain.calls == [] and plain.errors == [] and plain.content == "The answer is 391."
    assert parse_turn("391", "llama3", TOOLS, "c").calls == []


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("<tool_call>{'name': 'calculator'}</tool_call>", "is not JSON"),
        ('<tool_call>{"name": "calculator", "arguments": {"expression": "1"}}', "never closed"),
        (
            '<tool_call>{"name": "search", "arguments": {}}</tool_call>',
            "no tool named 'search' (tools: calculator, today)",
        ),
        ('<tool_call>{"name": "calculator", "arguments": {}}</tool_call>', "'expression' is a required property"),
        (
            '<tool_call>{"name": "calculator", "arguments": {"expression": 5}}</tool_call>',
            "expression: 5 is not of type 'string'",
        ),
        ('<tool_call>["calculator"]</tool_call>', "must be a JSON object"),
        ('<tool_call>{"name": "calculator", "arguments": [1]}</tool_call>', "must be a JSON object, got list"),
    ],
)
def test_malformed_calls_become_errors_the_model_reads(text: str, error: str) -> None:
    turn = parse_turn(text, "hermes", TOOLS, "c")
    assert turn.calls == []
    assert len(turn.errors) == 1 and error in turn.errors[0], turn.errors


def test_schemas_from_the_environment_functions() -> None:
    described = [
        {
            "name": "lookup",
            "doc": "Find a word.",
            "params": [
                {"name": "word", "annotation": "str", "required": True},
                {"name": "limit", "annotation": "int", "required": False},
                {"name": "item", "annotation": None, "required": True},
            ],
        }
    ]
    assert schemas_from_signatures(described) == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Find a word.",
                "parameters": {
                    "type": "object",
                    "properties": {"word": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["word"],
                },
            },
        }
    ]
