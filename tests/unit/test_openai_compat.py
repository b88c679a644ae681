"""OpenAI's reinforcement hyperparameters in GRPOConfig, and the metadata filter's parsing (no server needed;
tests/integration/test_openai_sdk.py drives the same through the real ``openai`` SDK)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from api.core.errors import InvalidRequest
from api.jobs.openai_compat import ignored_field_warnings, metadata_filters
from grpo_core.schemas.config import DEFAULT_LEARNING_RATE, GRPOConfig

OPENAI_RFT_HP = {
    "batch_size": "auto",
    "n_epochs": "auto",
    "learning_rate_multiplier": "auto",
    "eval_interval": "auto",
    "eval_samples": "auto",
    "reasoning_effort": "default",
    "compute_multiplier": "auto",
}


def test_an_openai_rft_hyperparameter_block_is_accepted_as_is() -> None:
    cfg = GRPOConfig.model_validate(OPENAI_RFT_HP)
    assert (cfg.learning_rate_multiplier, cfg.compute_multiplier, cfg.reasoning_effort) == (1.0, 1.0, "default")
    assert cfg.effective_learning_rate == cfg.learning_rate == DEFAULT_LEARNING_RATE
    assert ignored_field_warnings(cfg) == []


def test_learning_rate_multiplier_scales_ours_or_the_recipes_rate() -> None:
    assert GRPOConfig(learning_rate_multiplier=3).effective_learning_rate == pytest.approx(3 * DEFAULT_LEARNING_RATE)
    cfg = GRPOConfig.model_validate({"recipe": "deepseekmath", "learning_rate_multiplier": 2})
    # 1e-6 x 10 for LoRA = 1e-5, floored at the LoRA default (grpo_core.schemas.presets)
    assert cfg.learning_rate == 1e-4 and cfg.effective_learning_rate == pytest.approx(2e-4)
    # The resolved config the worker re-validates is stable: the multiplier is applied once, at the optimizer.
    again = GRPOConfig.model_validate(cfg.model_dump(mode="json"))
    assert again.effective_learning_rate == cfg.effective_learning_rate
    with pytest.raises(ValidationError, match=r"above 0\.01"):
        GRPOConfig(learning_rate=5e-3, learning_rate_multiplier=4)
    with pytest.raises(ValidationError, match="learning_rate_multiplier"):
        GRPOConfig.model_validate({"learning_rate_multiplier": 0})


def test_fields_without_a_grpo_meaning_warn() -> None:
    cfg = GRPOConfig.model_validate({"reasoning_effort": "high", "compute_multiplier": 2})
    warnings = ignored_field_warnings(cfg)
    assert len(warnings) == 2 and warnings[0].startswith("reasoning_effort='high' has no effect")
    assert "group_size" in warnings[1]
    with pytest.raises(ValidationError, match="reasoning_effort"):
        GRPOConfig.model_validate({"reasoning_effort": "extreme"})


def test_metadata_filter_parsing() -> None:
    assert metadata_filters([("limit", "2"), ("after", "x")], "sqlite") == []
    assert len(metadata_filters([("metadata[a]", "1"), ("metadata[b]", "")], "sqlite")) == 2
    assert len(metadata_filters([("metadata", "null")], "sqlite")) == 1
    for bad in (
        [("metadata", "null"), ("metadata[a]", "1")],
        [("metadata", "{}")],
        [("metadata[" + "k" * 65 + "]", "v")],
        [("metadata[]", "v")],
    ):
        with pytest.raises(InvalidRequest):
            metadata_filters(bad, "sqlite")


ODD_KEYS = ['say "hi"', "a.b", "x[0]", "back\\slash", "ünï", "$", "it's"]


def test_metadata_filter_matches_any_key_on_sqlite(tmp_path: Path) -> None:
    """SQLite's JSON paths cannot express every key; the filter must still find each (and never raise)."""
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    from api.db.models import File, Job
    from tests.helpers import migrate

    url = f"sqlite:///{tmp_path / 'rft.db'}"
    migrate(url)
    engine = create_engine(url)
    with Session(engine) as s:
        s.add(File(id="file-1", project_id="p", filename="f", purpose="fine-tune", bytes=1, row_count=1, sha256="x",
                   object_key="k"))  # fmt: skip
        s.flush()
        for i, md in enumerate([*({k: "v"} for k in ODD_KEYS), None, {"team": "a", "k": ""}]):
            s.add(Job(id=f"ftjob-{i}", project_id="p", model="m", training_file="file-1", seed=0, metadata_=md,
                      method={}, status="queued", total_steps=1))  # fmt: skip
        s.commit()

        def ids(*pairs: tuple[str, str]) -> list[str]:
            return sorted(s.scalars(select(Job.id).where(*metadata_filters(list(pairs), "sqlite"))))

        for i, key in enumerate(ODD_KEYS):
            assert ids((f"metadata[{key}]", "v")) == [f"ftjob-{i}"], key
        n = len(ODD_KEYS)
        assert ids(("metadata", "null")) == [f"ftjob-{n}"]
        assert ids(("metadata[team]", "a"), ("metadata[k]", "")) == [f"ftjob-{n + 1}"]
        assert ids(("metadata[team]", "a"), ("metadata[k]", "x")) == []
    engine.dispose()


def test_the_optimizer_runs_at_the_multiplied_rate(tiny_model_dir: Path, tmp_path: Path) -> None:
    """One step on the tiny model: the learning rate in the step's metrics is learning_rate × multiplier."""
    from grpo_core.trainer import train
    from tests.training import ROWS, DigitShare, Recorder

    cfg = GRPOConfig(group_size=2, batch_size=1, max_steps=1, max_completion_tokens=3, learning_rate_multiplier=4)
    rec = Recorder()
    train(cfg, tiny_model_dir, ROWS, [DigitShare()], callbacks=rec, work_dir=tmp_path, seed=0)
    assert rec.steps[0].learning_rate == pytest.approx(4 * DEFAULT_LEARNING_RATE)
