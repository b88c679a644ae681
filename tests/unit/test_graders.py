"""Graders without user code: OpenAI's shapes and our built-ins, templates, the multi formula, the LLM judge
against a real HTTP server of ours on loopback. (Python graders run in the sandbox: tests/sandbox.)"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from grpo_core.rewards.base import (
    Endpoint,
    FormulaFailed,
    GraderCodeError,
    GraderEnv,
    InvalidVariable,
    JudgeReplyError,
    JudgeRequestError,
    PartErrors,
    has_error,
)
from grpo_core.rewards.graders import build_grader, build_graders, extract_answer
from grpo_core.rewards.judge import JudgeNotConfigured
from grpo_core.rewards.templates import render
from grpo_core.schemas.formula import FormulaError, evaluate_formula, parse_formula
from grpo_core.schemas.graders import GraderSpec, StringCheckGrader

SPEC = TypeAdapter(GraderSpec)


def score(spec: dict[str, Any], texts: list[str], rows: list[dict[str, Any]], env: GraderEnv | None = None) -> Any:
    return build_grader(SPEC.validate_python(spec), env).score(texts, rows)


@pytest.mark.parametrize(
    ("op", "text", "expected"),
    [
        ("eq", "42", 1.0),
        ("eq", "42 ", 0.0),
        ("ne", "41", 1.0),
        ("like", "it is 42.", 1.0),
        ("like", "IT", 0.0),
        ("ilike", "The Answer Is 42", 1.0),
    ],
)
def test_string_check_operations(op: str, text: str, expected: float) -> None:
    g = build_grader(StringCheckGrader(reference="{{item.answer}}", operation=op))  # type: ignore[arg-type]
    ref = "answer is 42" if op == "ilike" else "42"
    assert g.score([text], [{"answer": ref}]).scores == [expected]


def test_a_missing_column_scores_zero_and_names_the_variable() -> None:
    res = build_grader(StringCheckGrader(reference="{{item.solution}}")).score(["x"], [{"answer": "1"}])
    assert res.scores == [0.0] and isinstance(res.errors[0], InvalidVariable)
    assert str(res.errors[0]) == "TemplateError: {{item.solution}} is not in the item"


def test_templates_nested_paths_and_output_json() -> None:
    assert render("{{ item.a.b }}-{{sample.output_text}}", {"output_text": "t"}, {"a": {"b": 3}}) == "3-t"
    spec = {"type": "string_check", "input": "{{sample.output_json.city}}", "reference": "{{item.city}}"}
    assert score(spec, ['{"city": "Oslo"}', "Oslo", '{"town": 1}'], [{"city": "Oslo"}] * 3).scores == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("metric", "out", "ref", "lo", "hi"),
    [
        ("fuzzy_match", "the cat sat on the mat", "the cat is on the mat", 0.9, 0.95),
        ("bleu", "the cat sat on the mat", "the cat sat on the mat", 0.999, 1.0),
        ("bleu", "completely different words", "the cat sat on the mat", 0.0, 0.05),
        ("gleu", "the cat sat on the mat", "the cat is on the mat", 0.45, 0.55),
        ("meteor", "the cat sat on the mat", "the cat sat on the mat", 0.95, 1.0),
        ("rouge_1", "the cat sat on the mat", "the cat is on the mat", 0.83, 0.84),
        ("rouge_2", "the cat sat on the mat", "the cat is on the mat", 0.59, 0.61),
        ("rouge_l", "the cat sat on the mat", "the cat is on the mat", 0.83, 0.84),
    ],
)
def test_text_similarity_metrics(metric: str, out: str, ref: str, lo: float, hi: float) -> None:
    spec = {"type": "text_similarity", "reference": "{{item.r}}", "evaluation_metric": metric}
    (value,) = score(spec, [out], [{"r": ref}]).scores
    assert lo <= value <= hi


def test_text_similarity_pass_threshold_and_cosine_without_embeddings() -> None:
    spec = {"type": "text_similarity", "reference": "abc", "evaluation_metric": "fuzzy_match", "pass_threshold": 0.6}
    assert score(spec, ["abd", "xyz"], [{}, {}]).scores == [1.0, 0.0]
    with pytest.raises(JudgeNotConfigured, match="EMBEDDING_BASE_URL"):
        score({**spec, "evaluation_metric": "cosine"}, ["abc"], [{}])


@pytest.mark.parametrize(
    ("text", "gold", "expected"),
    [
        ("so the answer is \\boxed{\\frac{3}{4}}", "0.75", 1.0),
        ("<think>hmm</think><answer>12</answer>", "12", 1.0),
        ("\\boxed{\\{1, 2\\}}", "\\{2, 1\\}", 1.0),
        ("The answer is \\boxed{5}", "6", 0.0),
        ("no answer at all", "3", 0.0),
    ],
)
def test_math_grader(text: str, gold: str, expected: float) -> None:
    assert score({"type": "math", "reference": "{{item.answer}}"}, [text], [{"answer": gold}]).scores == [expected]


def test_extract_answer_takes_the_last_balanced_box() -> None:
    assert extract_answer("\\boxed{1} then \\boxed{\\frac{a}{b}}", "auto") == "\\frac{a}{b}"
    assert extract_answer("<answer>x</answer><answer>y</answer>", "answer_tag") == "y"
    assert extract_answer("plain", "boxed") == ""


def test_regex_format_json_schema_and_length() -> None:
    fmt = {"type": "format"}
    texts = ["<think>a</think>\n<answer>1</answer>", "<answer>1</answer>", " <think>x\ny</think><answer>2</answer> "]
    assert score(fmt, texts, [{}] * 3).scores == [1.0, 0.0, 1.0]
    rx = {"type": "regex", "pattern": r"\d+", "mode": "search"}
    assert score(rx, ["abc 12", "none"], [{}, {}]).scores == [1.0, 0.0]
    js = {
        "type": "json_schema",
        "schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}},
    }
    assert score(js, ['{"a": 1}', '{"a": "x"}', "not json"], [{}] * 3).scores == [1.0, 0.0, 0.0]
    ln = {"type": "length", "mode": "linear", "target": 3, "scale": 2}
    assert score(ln, ["abc", "abcdefg"], [{}, {}]).scores == [0.0, -2.0]
    so = {"type": "length", "mode": "soft_overlong", "target": 4, "buffer": 4}
    assert score(so, ["abcd", "abcdef", "a" * 20], [{}] * 3).scores == [0.0, -0.5, -1.0]


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"type": "regex", "pattern": "("}, "does not compile"),
        ({"type": "json_schema", "schema": {"type": 3}}, "not a valid JSON Schema"),
        ({"type": "python", "source": "def grade(:\n"}, "does not parse"),
        ({"type": "python", "source": "def score(s, i):\n    return 1\n"}, "must define a top-level function"),
        ({"type": "score_model", "model": "m", "input": [{"role": "user"}]}, "string 'role' and 'content'"),
        ({"type": "multi", "graders": {"a": {"type": "format"}}, "calculate_output": "a + b"}, "unknown name 'b'"),
        ({"type": "multi", "graders": {"a": {"type": "multi", "graders": {}}}}, "multi"),
        ({"type": "nope"}, "type"),
    ],
)
def test_bad_specs_are_rejected_with_the_reason(spec: dict[str, Any], reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        SPEC.validate_python(spec)


def test_python_grader_accepts_the_reward_signature() -> None:
    src = "def reward(prompt, completion, **row):\n    return float(completion == row['answer'])\n"
    assert SPEC.validate_python({"type": "python", "source": src}).type == "python"


@pytest.mark.parametrize(
    ("formula", "values", "expected"),
    [
        ("(a + b) / 2", {"a": 1, "b": 0}, 0.5),
        ("0.5 * a + 0.5 * b", {"a": 1, "b": 1}, 1.0),
        ("a ^ 2 - -b", {"a": 3, "b": 1}, 10.0),
        ("min(a, b) + max(a, b, 7) + abs(-a)", {"a": 2, "b": 5}, 11.0),
        ("floor(a) + ceil(b) + sqrt(4) + log(exp(1))", {"a": 1.7, "b": 0.2}, 5.0),
    ],
)
def test_formula_values(formula: str, values: dict[str, float], expected: float) -> None:
    assert evaluate_formula(parse_formula(formula, set(values)), values) == pytest.approx(expected)


@pytest.mark.parametrize(
    "formula",
    [
        "__import__('os').system('id')",
        "a.__class__",
        "().__class__.__bases__[0]",
        "[a for a in b]",
        "a if b else 1",
        "a < b",
        "open('/etc/passwd')",
        "lambda: 1",
        "'x' * 3",
        "min",
        "a; b",
        "9" * 300 + "+" * 0 + " + a" * 300,
    ],
)
def test_formula_rejects_anything_outside_the_whitelist(formula: str) -> None:
    with pytest.raises(FormulaError):
        parse_formula(formula, {"a", "b"})


def test_formula_math_errors_are_reported() -> None:
    tree = parse_formula("a / b", {"a", "b"})
    with pytest.raises(ValueError, match="ZeroDivisionError"):
        evaluate_formula(tree, {"a": 1, "b": 0})
    with pytest.raises(ValueError, match="OverflowError"):
        evaluate_formula(parse_formula("exp(a)", {"a"}), {"a": 1e6})


def test_multi_with_formula_reports_sub_scores() -> None:
    spec = {
        "type": "multi",
        "name": "contact",
        "graders": {
            "name": {
                "type": "text_similarity",
                "input": "{{sample.output_json.name}}",
                "reference": "{{item.name}}",
                "evaluation_metric": "fuzzy_match",
            },
            "email": {"type": "string_check", "input": "{{sample.output_json.email}}", "reference": "{{item.email}}"},
        },
        "calculate_output": "(name + email) / 2",
    }
    item = {"name": "John Doe", "email": "j@x.io"}
    res = score(spec, ['{"name": "John Doe", "email": "j@x.io"}', '{"name": "Jon Doe", "email": "no"}'], [item] * 2)
    assert res.scores[0] == 1.0 and 0.4 < res.scores[1] < 0.5
    assert res.sub_scores["email"] == [1.0, 0.0] and res.sub_scores["name"][0] == 1.0


def test_multi_failures_are_typed_by_whose_they_are() -> None:
    """A part's missing column and the formula's division by zero are both reported, each as its class, so the
    pre-flight's flags read the class and never the message."""
    spec = {
        "type": "multi",
        "graders": {
            "a": {"type": "string_check", "input": "{{sample.output_text}}", "reference": "{{item.missing}}"},
            "b": {"type": "regex", "pattern": "7"},
        },
        "calculate_output": "b / a",
    }
    res = score(spec, ["7", "x"], [{}, {}])
    assert res.scores == [0.0, 0.0]
    both, zero_by_zero = res.errors
    assert isinstance(both, PartErrors) and has_error(both, InvalidVariable) and has_error(both, FormulaFailed)
    assert str(both).startswith("a: TemplateError: {{item.missing}} is not in the item; calculate_output failed")
    assert isinstance(zero_by_zero, PartErrors) and has_error(zero_by_zero, FormulaFailed)  # 0 / 0 after the error
    assert not has_error(None, InvalidVariable)
    formula_only = score({**spec, "graders": {**spec["graders"], "a": {"type": "regex", "pattern": "z"}}}, ["7"], [{}])
    assert isinstance(formula_only.errors[0], FormulaFailed)


def test_multi_without_formula_is_one_column_per_sub_grader() -> None:
    spec = SPEC.validate_python(
        {"type": "multi", "graders": {"fmt": {"type": "format"}, "num": {"type": "regex", "pattern": "7"}}}
    )
    graders = build_graders(spec)
    assert [g.name for g in graders] == ["fmt", "num"]


class _Judge(BaseHTTPRequestHandler):
    """An OpenAI-compatible /chat/completions that replies with the length of the last message's content."""

    seen: list[dict[str, Any]] = []

    def _reply(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path.endswith("/embeddings"):  # a 2-d embedding: (count of 'a', count of 'b')
            vecs = [[float(t.count("a")), float(t.count("b"))] for t in body["input"]]
            self._reply({"data": [{"index": i, "embedding": v} for i, v in reversed(list(enumerate(vecs)))]})
            return
        _Judge.seen.append({"body": body, "auth": self.headers.get("Authorization")})
        content = body["messages"][-1]["content"]
        reply = "nonsense" if "refuse" in content else f"Score: {len(content) / 10}"
        if "crash" in content:
            self.send_response(500)
            self.end_headers()
            return
        self._reply({"choices": [{"message": {"role": "assistant", "content": reply}}]})

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_score_model_calls_the_configured_judge(judge_url: str) -> None:
    spec = {
        "type": "score_model",
        "model": "judge-1",
        "input": [{"role": "system", "content": "Rate it."}, {"role": "user", "content": "{{sample.output_text}}"}],
        "range": [0, 1],
        "sampling_params": {"temperature": 0, "seed": 3, "max_completions_tokens": 8},
    }
    env = GraderEnv(judge=Endpoint(judge_url, api_key="k3y"))
    res = score(spec, ["abcde", "x" * 30, "refuse", "crash"], [{}] * 4, env)
    assert res.scores == [0.5, 1.0, 0.0, 0.0]  # clipped to the range; errors score 0
    assert isinstance(res.errors[2], JudgeReplyError) and "no number" in str(res.errors[2])
    assert isinstance(res.errors[3], JudgeRequestError) and "judge request failed" in str(res.errors[3])
    sent = _Judge.seen[0]
    assert sent["auth"] == "Bearer k3y" and sent["body"]["model"] == "judge-1"
    assert sent["body"]["max_tokens"] == 8 and sent["body"]["seed"] == 3


def test_score_model_without_a_judge_is_a_clear_error() -> None:
    spec = {"type": "score_model", "model": "m", "input": [{"role": "user", "content": "x"}]}
    with pytest.raises(JudgeNotConfigured, match="JUDGE_BASE_URL"):
        build_grader(SPEC.validate_python(spec), GraderEnv())


def test_non_finite_values_never_leave_a_grader() -> None:
    res = score({"type": "length", "target": 0, "scale": 1e-310}, ["a" * 10], [{}])  # -10/1e-310 = -inf
    assert res.scores == [0.0] and math.isfinite(res.scores[0]) and isinstance(res.errors[0], GraderCodeError)


def test_cosine_similarity_uses_the_configured_embeddings(judge_url: str) -> None:
    spec = {"type": "text_similarity", "reference": "{{item.r}}", "evaluation_metric": "cosine"}
    env = GraderEnv(embeddings=Endpoint(judge_url, model="emb-1"))
    res = score(spec, ["aa", "ab", "bbb"], [{"r": "a"}] * 3, env)
    assert res.scores == pytest.approx([1.0, 2**-0.5, 0.0])  # (2,0)·(1,0); (1,1)·(1,0)/√2; (0,3)·(1,0)


def test_scores_outside_the_allowed_range_are_errors() -> None:
    res = score({"type": "length", "target": 0, "scale": 1e-3}, ["a" * 10_000], [{}])  # -1e7
    assert res.scores == [0.0] and "outside the allowed range" in str(res.errors[0])
