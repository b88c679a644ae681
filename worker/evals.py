"""An eval run on this worker, as glue: claim it, fetch its items and model (a registered or catalog base model,
plus the adapter of a fine-tuned model or checkpoint), call grpo_core.evaluation.evals (which opens the policy,
samples every item ``n`` times with the model's chat template and grades each sample with the eval's testing
criteria), post the items in batches and finish.

A run is small (hundreds of items, a few minutes): it has no heartbeat, its claim holds for an hour
(api.evals.leases), and a cancel is learnt at the next batch's post, which the API refuses.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from grpo_core.errors import UserError
from grpo_core.rewards.judge import JudgeNotConfigured
from grpo_core.schemas.graders import named_secrets
from runtime import eval_contract as evc
from runtime.storage import make_store
from worker.client import InternalClient, StaleLease, worker_id
from worker.failures import classify
from worker.settings import WorkerSettings
from worker.tracking import require_carried

log = logging.getLogger(__name__)
BATCH = 16  # items sampled and posted together


class EvalRunner:
    def __init__(self, run_id: str, settings: WorkerSettings) -> None:
        self.run_id = run_id
        self.settings = settings
        self.client = InternalClient(settings.api_url, settings.internal_token)
        self.store = make_store(settings)
        self.worker_id = worker_id()
        self.claim_id = uuid.uuid4().hex

    def run(self) -> None:
        try:
            claim = self.client.eval_claim(self.run_id, self.worker_id, self.claim_id)
        except StaleLease as exc:
            log.info("eval run %s not claimed: %s", self.run_id, exc)
            return
        work = self.settings.scratch_dir / "evals" / self.run_id / self.claim_id[:8]
        try:
            self._run(claim, work)
            self.client.eval_finish(self.run_id, evc.EvalFinishRequest(claim_id=self.claim_id, status="completed"))
        except StaleLease as exc:  # canceled: nothing more to write
            log.info("eval run %s stopped: %s", self.run_id, exc)
        except Exception as exc:  # the eval run's boundary: whatever it raised, it finishes failed, saying why
            failure = classify(exc, self.run_id, None)
            log.exception("eval run %s failed", self.run_id)
            self.client.eval_finish(
                self.run_id,
                evc.EvalFinishRequest(
                    claim_id=self.claim_id, status="failed", error_code=failure.code, error_message=failure.message
                ),
            )
        finally:
            self.client.close()
            shutil.rmtree(work, ignore_errors=True)
            from worker.job import model_cache

            model_cache(self.settings).release_all()  # its device memory went back when eval_policy closed

    def _adapter_dir(self, claim: evc.EvalClaim, work: Path) -> Path | None:
        """The fine-tuned model's adapter tar from the store, unpacked into a PEFT adapter folder (None: the base
        model is evaluated)."""
        from worker.checkpoints import unpack

        return unpack(self.store, claim.adapter_key, work / "adapter") if claim.adapter_key is not None else None

    def _run(self, claim: evc.EvalClaim, work: Path) -> None:
        from grpo_core.evaluation.evals import Criterion, EvalSampling, eval_policy, run_items
        from grpo_core.rewards.graders import build_grader
        from grpo_core.schemas.graders import GraderSpec, uses_python

        work.mkdir(parents=True, exist_ok=True)
        items_path = work / "items.jsonl"
        self.store.get_file(claim.file_key, items_path)
        rows = list(enumerate(read_jsonl_lenient(items_path)))
        spec: TypeAdapter[Any] = TypeAdapter(GraderSpec)
        specs = [spec.validate_python(c.grader) for c in claim.criteria]
        if any(uses_python(g) for g in specs):  # the same refusal as for a job's python grader
            from worker.sandbox_check import python_graders_allowed

            allowed, why = python_graders_allowed(self.settings.reward_sandbox)
            if not allowed:
                raise UserError(why)
        check_eval_secrets(claim)
        env = self.settings.grader_env(claim.secrets)
        try:
            criteria = [
                Criterion(c.name, build_grader(g, env), c.pass_threshold)
                for c, g in zip(claim.criteria, specs, strict=True)
            ]
        except JudgeNotConfigured as exc:
            raise UserError(f"this service cannot run the grader: {exc}") from None
        s = claim.sampling
        sampling = EvalSampling(
            n=s.n, temperature=s.temperature, max_completion_tokens=s.max_completion_tokens, top_p=s.top_p, seed=s.seed
        )
        try:
            from worker.job import base_model_dir

            model_dir = base_model_dir(self.settings, self.store, claim.base_model, claim.model_source)
            with eval_policy(model_dir, self._adapter_dir(claim, work), sampling) as sample:
                for lo in range(0, len(rows), BATCH):
                    results = run_items(rows[lo : lo + BATCH], claim.template, sample, criteria)
                    self.client.eval_items(self.run_id, evc.EvalItemsRequest(claim_id=self.claim_id, items=results))
        finally:
            for c in criteria:
                c.grader.close()


def check_eval_secrets(claim: evc.EvalClaim) -> None:
    """Fail the run, saying which, when a criterion names a project secret its claim does not carry, as a job's
    claim is checked (worker.tracking)."""
    named = {
        k: v for i, c in enumerate(claim.criteria) for k, v in named_secrets(c.grader, f"testing_criteria[{i}]").items()
    }
    require_carried(named, claim.secrets, "this eval run", "run again")


def read_jsonl_lenient(path: Path) -> list[dict[str, Any]]:
    """An eval file's lines (``{"item": …}`` objects or plain rows): JSON objects, no training-row rules."""
    import json

    out = []
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if line.strip():
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise UserError(f"line {n} of the eval's items is not a JSON object")
            out.append(obj)
    return out
