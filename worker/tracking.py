"""Experiment tracking where users already look: Weights & Biases (the job's OpenAI-shaped ``integrations``) and
MLflow (when the operator sets MLFLOW_TRACKING_URI): the config, every step's metrics, and the final adapter's
location.

W&B runs online with the project's own key when the job's integration names a project secret
(``api_key_secret``: its value comes in the claim, ``ClaimResponse.secrets``), else with the worker's
WANDB_API_KEY, else in offline mode into WANDB_DIR (``wandb sync`` uploads it later). A project's key goes to its
run's ``wandb.Settings`` only: never os.environ (which the job's other processes inherit), never a file (wandb
writes ~/.netrc only for keys it finds itself), never a message (each is scrubbed of it). wandb keeps an explicit
key as its process's session credentials and would hand it to the next run that names none, so the tracker drops
them (``forget_wandb_credentials``) before every run and after a run that used a project's key: the next job on
this worker process starts from the worker's own key.

Tracking never fails a job: a backend that raises is reported once as a warning event and switched off. A named
secret the claim does not carry does fail it (``check_secrets``): logging with anyone else's key instead would send
a project's metrics to the operator's account.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import SecretStr

from grpo_core.errors import UserError
from grpo_core.schemas.graders import named_secrets
from grpo_core.schemas.metrics import Level, StepMetrics
from runtime import internal as api
from worker.settings import WorkerSettings

log = logging.getLogger(__name__)
Say = Callable[[str, Level], None]  # (message, level)


def flat_metrics(m: StepMetrics) -> dict[str, float]:
    """A step's numbers as ``a/b`` keys (what both backends chart); the logged rollouts are left out."""
    out: dict[str, float] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, int | float):  # bool is an int
            out[prefix] = float(value)
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}/{k}" if prefix else str(k), v)
        elif isinstance(value, list) and value and isinstance(value[0], dict) and "name" in value[0]:
            for v in value:  # per-grader scores: by name
                walk(f"{prefix}/{v['name']}", {k: x for k, x in v.items() if k != "name"})

    walk("", m.model_dump(mode="json", exclude={"samples"}))
    return out


def _flat_config(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out |= _flat_config(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: value}


class Tracker:
    def __init__(self, claim: api.ClaimResponse, settings: WorkerSettings, say: Say) -> None:
        self.claim = claim
        self.settings = settings
        self.say = say
        self.wandb: Any = None
        self.mlflow: Any = None
        integration = next((i for i in claim.integrations if i.type == "wandb"), None)
        self._wandb_spec = integration.wandb if integration is not None else None
        # the project's own W&B key (the secret its integration names), None: the worker's WANDB_API_KEY
        self._wandb_key: SecretStr | None = None
        if integration is not None and integration.api_key_secret:
            self._wandb_key = claim.secrets.get(integration.api_key_secret)

    @property
    def active(self) -> bool:
        return self.wandb is not None or self.mlflow is not None

    def _guard(self, backend: str, action: Callable[[], object]) -> None:
        try:
            action()
        except Exception as exc:  # a tracking outage never costs the job
            text = self.scrub(f"{type(exc).__name__}: {exc}")
            if self._wandb_key is None:
                log.exception("%s tracking failed", backend)
            else:  # no traceback: what it quotes cannot be scrubbed of the project's key
                log.warning("%s tracking failed: %s", backend, text)
            self.say(f"{backend} tracking stopped: {text}", "warn")
            if backend == "W&B":
                self.wandb = None
            else:
                self.mlflow = None

    def start(self) -> None:
        config = {
            "job_id": self.claim.job_id,
            "model": self.claim.model,
            "seed": self.claim.seed,
            "total_steps": self.claim.total_steps,
            "hyperparameters": self.claim.hyperparameters,
            "grader": self.claim.grader.get("name") or self.claim.grader.get("type"),
        }
        spec = self._wandb_spec
        if spec is not None:
            self._guard("W&B", lambda: self._start_wandb(spec, config))
        if self.settings.mlflow_tracking_uri:
            self._guard("MLflow", lambda: self._start_mlflow(config))

    def _start_wandb(self, spec: api.WandbSpec, config: dict[str, Any]) -> None:
        import wandb

        key = self._wandb_key
        online = key is not None or bool(os.environ.get("WANDB_API_KEY"))
        folder = self.settings.wandb_path
        folder.mkdir(parents=True, exist_ok=True)
        forget_wandb_credentials()  # never a key an earlier job of this process logged in with
        # the project's key for this run only: wandb sends it to W&B and keeps it in memory, and writes it nowhere
        auth = {"api_key": key.get_secret_value()} if key is not None else {}
        self.wandb = wandb.init(
            project=spec.project,
            name=spec.name or self.claim.job_id,
            entity=spec.entity,
            tags=spec.tags,
            config=config,
            dir=str(folder),
            mode="online" if online else "offline",
            id=f"{self.claim.job_id}-e{self.claim.epoch}",
            settings=wandb.Settings(silent=True, console="off", **auth),
            reinit="create_new",  # never hand back a run a previous job in this process left open
        )
        where = f"project {spec.project}" if online else f"offline in {folder} (wandb sync uploads it)"
        if key is not None:
            where += " with this project's key"
        self.say(f"Logging to Weights & Biases: run {self.wandb.id}, {where}", "info")

    def _start_mlflow(self, config: dict[str, Any]) -> None:
        import mlflow

        mlflow.set_tracking_uri(str(self.settings.mlflow_tracking_uri))
        mlflow.set_experiment(self.settings.mlflow_experiment)
        self.mlflow = mlflow.start_run(run_name=f"{self.claim.job_id}-e{self.claim.epoch}")
        params = {k: str(v)[:500] for k, v in _flat_config(config).items()}
        mlflow.log_params(params)
        mlflow.set_tags({"rft.job_id": self.claim.job_id, "rft.model": self.claim.model})
        experiment = self.settings.mlflow_experiment
        self.say(f"Logging to MLflow: run {self.mlflow.info.run_id}, experiment {experiment}", "info")

    def step(self, metrics: StepMetrics) -> None:
        values = flat_metrics(metrics)
        if self.wandb is not None:
            run = self.wandb
            self._guard("W&B", lambda: run.log(values, step=metrics.step))
        if self.mlflow is not None:
            import mlflow

            safe = {k.replace("@", "_at_"): v for k, v in values.items()}
            self._guard("MLflow", lambda: mlflow.log_metrics(safe, step=metrics.step))

    def checkpoint(self, step: int, adapter_key: str, *, final: bool) -> None:
        """Where the adapter is: the object key (and, for the final one, the model's name once it succeeds)."""
        location = {"adapter_object_key": adapter_key, "adapter_step": step}
        if self.wandb is not None:
            run = self.wandb
            self._guard("W&B", lambda: run.summary.update(location | {"final": final}))
        if self.mlflow is not None:
            import mlflow

            tags = {"rft.adapter_object_key": adapter_key, "rft.adapter_step": str(step)}
            self._guard("MLflow", lambda: mlflow.set_tags(tags))

    def finish(self, status: api.FinishStatus) -> None:
        if self.wandb is not None:
            run = self.wandb
            code = 0 if status == api.FinishStatus.succeeded else 1
            self._guard("W&B", lambda: (run.summary.update({"status": str(status)}), run.finish(exit_code=code)))
            self.wandb = None
        if self._wandb_key is not None:  # also when the run never started: a failed init may have logged in
            self._guard("W&B", forget_wandb_credentials)
        if self.mlflow is not None:
            import mlflow

            state = {api.FinishStatus.succeeded: "FINISHED", api.FinishStatus.failed: "FAILED"}.get(status, "KILLED")
            self._guard("MLflow", lambda: mlflow.end_run(status=state))
            self.mlflow = None

    def scrub(self, text: str) -> str:
        """``text`` with the project's key blanked out (what an exception says may quote what it was given)."""
        if self._wandb_key is None:
            return text
        return text.replace(self._wandb_key.get_secret_value(), "[secret]")


def forget_wandb_credentials() -> None:
    """Drop the W&B credentials this process holds: wandb keeps an explicit key as the session's and gives it to the
    next run that names none. ``wandb.teardown`` ends the process's W&B session (its runs are finished by then) and
    its credentials with it, so the next run finds the worker's own WANDB_API_KEY (or none) again."""
    import wandb

    wandb.teardown()


def check_secrets(claim: api.ClaimResponse) -> None:
    """Fail the job, saying which, when an integration or a grader (a score_model grader's own judge) names a
    project secret its claim does not carry."""
    named = {f"integrations[{i}].api_key_secret": x.api_key_secret for i, x in enumerate(claim.integrations)}
    require_carried(named | named_secrets(claim.grader), claim.secrets, "this job", "create the job again")


def require_carried(named: Mapping[str, str | None], carried: Mapping[str, Any], who: str, then: str) -> None:
    """UserError naming the field when a secret ``named`` (field -> name) is not in the claim's ``carried``: deleted
    since the job or eval was created, or one the API cannot decrypt (SECRETS_KEY changed since it was written)."""
    for param, name in named.items():
        if name and name not in carried:
            raise UserError(
                f"{param}: the project secret {name!r} is not available to {who}: it was deleted, or the API cannot "
                "decrypt it (its SECRETS_KEY changed since the secret was written). Write it again (POST /v1/secrets "
                f"or `rft secrets set`), then {then}"
            )


def tracker_for(claim: api.ClaimResponse, settings: WorkerSettings, say: Say) -> Tracker | None:
    """A tracker when the job asks for W&B or the operator configured MLflow; None otherwise."""
    if not claim.integrations and not settings.mlflow_tracking_uri:
        return None
    return Tracker(claim, settings, say)
