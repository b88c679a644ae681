import pytest
from pydantic import TypeAdapter, ValidationError

from grpo_core.rewards.graders import build_grader, render
from grpo_core.rewards.python_runner import GraderError
from grpo_core.rewards.schemas import GraderSpec, PythonGrader, StringCheckGrader

SPEC = TypeAdapter(GraderSpec)


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


def test_template_missing_column_is_an_unscorable_sample() -> None:
    g = build_grader(StringCheckGrader(reference="{{item.solution}}"))
    res = g.score(["x"], [{"answer": "1"}])
    assert res.scores == [None] and "item.solution" in (res.errors[0] or "")


def test_render_nested_paths() -> None:
    assert render("{{ item.a.b }}-{{sample.output_text}}", {"output_text": "t"}, {"a": {"b": 3}}) == "3-t"


def test_python_grader_scores_and_reports_per_row_errors() -> None:
    src = "def grade(sample, item):\n    return 1.0 / int(item['d'])\n"
    res = build_grader(PythonGrader(source=src)).score(["a", "b", "c"], [{"d": 2}, {"d": 0}, {"d": "x"}])
    assert res.scores == [0.5, None, None]
    assert "ZeroDivisionError" in (res.errors[1] or "") and "ValueError" in (res.errors[2] or "")


def test_python_grader_non_number_is_unscorable() -> None:
    res = build_grader(PythonGrader(source="def grade(sample, item):\n    return 'yes'\n")).score(["a"], [{}])
    assert res.scores == [None] and "not a finite number" in (res.errors[0] or "")


def test_python_grader_timeout_is_a_grader_error() -> None:
    src = "def grade(sample, item):\n    while True:\n        pass\n"
    with pytest.raises(GraderError, match="timed out"):
        build_grader(PythonGrader(source=src, timeout_seconds=1)).score(["a"], [{}])


def test_python_grader_sees_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret")
    src = "import os\ndef grade(sample, item):\n    return float('AWS_SECRET_ACCESS_KEY' in os.environ)\n"
    assert build_grader(PythonGrader(source=src)).score(["a"], [{}]).scores == [0.0]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("def grade(:\n", "does not parse"),
        ("def score(s, i):\n    return 1\n", "must define a top-level function grade"),
    ],
)
def test_python_source_checked_at_validation(source: str, reason: str) -> None:
    with pytest.raises(ValidationError, match=reason):
        SPEC.validate_python({"type": "python", "source": source})


def test_unknown_grader_type_rejected() -> None:
    with pytest.raises(ValidationError):
        SPEC.validate_python({"type": "score_model", "model": "x"})
