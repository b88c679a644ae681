"""The calculator task of the multi-turn demonstration (issue 20): two-digit multiplications that SmolLM2-135M
cannot do in its head, a calculator tool run in the sandbox, and a grader that checks the final answer.

Each row is a conversation: one worked example in which the assistant calls the calculator and reads its result
(the data format OpenAI's chat fine-tuning uses: an assistant turn with ``tool_calls``, a ``tool`` turn), then the
new question. The row carries the function tool's JSON schema (``tools``) and the ``answer`` the grader checks.
"""

from __future__ import annotations

import json
import random
from typing import Any

ENVIRONMENT = '''
import ast, operator

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression with + - * / and parentheses, e.g. 12*(3+4)."""
    def ev(node):
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        raise ValueError("only numbers and + - * / are allowed")
    value = ev(ast.parse(expression, mode="eval").body)
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"
'''

GRADER = '''
import re

def grade(sample, item):
    """1 when the last number of the final answer is the product; the whole episode is in sample["messages"]."""
    numbers = re.findall(r"-?\\d+", sample["output_text"].replace(",", ""))
    return 1.0 if numbers and numbers[-1] == item["answer"] else 0.0
'''

TOOL = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression with + - * / and parentheses, e.g. 12*(3+4).",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string", "description": "The expression."}},
            "required": ["expression"],
        },
    },
}


def example(a: int, b: int) -> list[dict[str, Any]]:
    """One worked example: the question, the call, the tool's result, the answer."""
    args = json.dumps({"expression": f"{a}*{b}"})
    call = {"id": "call_0", "type": "function", "function": {"name": "calculator", "arguments": args}}
    return [
        {"role": "user", "content": f"What is {a}*{b}?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_0", "content": str(a * b)},
        {"role": "assistant", "content": f"The answer is {a * b}."},
    ]


def rows(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randint(11, 99), rng.randint(11, 99)
        shot = example(rng.randint(11, 99), rng.randint(11, 99))
        question = {"role": "user", "content": f"What is {a}*{b}?"}
        out.append({"messages": [*shot, question], "tools": [TOOL], "answer": str(a * b)})
    return out


def split(n_train: int = 64, n_valid: int = 32) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return rows(n_train, 1), rows(n_valid, 2)
