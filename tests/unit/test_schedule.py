import pytest

from grpo_core.update.schedule import lr_factor


def test_warmup_then_decay_by_hand() -> None:
    lin = [lr_factor(u, kind="linear", warmup=2, total=10) for u in (0, 1, 2, 6, 10)]
    assert lin == pytest.approx([0.5, 1.0, 1.0, 0.5, 0.0])
    cos = [lr_factor(u, kind="cosine", warmup=2, total=10) for u in (2, 6, 10)]
    assert cos == pytest.approx([1.0, 0.5, 0.0], abs=1e-12)
    assert lr_factor(5, kind="constant", warmup=0, total=10) == 1.0
