"""The worker's boot self-test: the active tier is reported, and a failing sandbox refuses python graders."""

from __future__ import annotations

from worker import sandbox_check


def test_boot_self_test_allows_python_graders_and_names_the_tier() -> None:
    report = sandbox_check.run_self_test("auto")
    assert report["ok"] and report["tier"] == "bwrap" and report["escaped"] == []
    allowed, message = sandbox_check.python_graders_allowed("auto")
    assert allowed and message.startswith("Python graders run in the bwrap sandbox")


def test_no_sandbox_refuses_python_graders_with_the_reason() -> None:
    try:
        report = sandbox_check.run_self_test("off")
        assert not report["ok"]
        allowed, message = sandbox_check.python_graders_allowed("off")
        assert not allowed and "python graders are refused on this worker" in message and "off" in message
    finally:
        sandbox_check.run_self_test("auto")  # leave this process's report as the suite expects it
