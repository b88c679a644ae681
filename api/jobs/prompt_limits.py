"""Prompt lengths checked when a job is created, with the base model's own tokenizer and chat template (no FastAPI).

A prompt over ``max_prompt_tokens`` used to fail the job after a worker had claimed it and loaded the model;
here it is a 422 naming the file and the first row over the limit, before anything is queued. The count is the
trainer's (grpo_core.data.prompt_tokens renders the chat template as transformers does, without torch). A model
without a fast tokenizer (a catalog folder with no ``tokenizer.json``) is left to the worker's check.
"""

from __future__ import annotations

import logging

from api.core.errors import Unprocessable
from api.core.settings import ApiSettings
from api.db.models import File
from api.files.service import iter_rows
from api.models.service import BaseModelEntry, tokenizer_folder
from grpo_core.data.prompt_tokens import PromptCounter, first_over
from grpo_core.schemas.config import GRPOConfig
from runtime.errors import StoreError
from runtime.storage import ObjectStore

log = logging.getLogger(__name__)

HP = "method.reinforcement.hyperparameters"


def check_prompt_lengths(
    store: ObjectStore, settings: ApiSettings, model: BaseModelEntry, files: dict[str, File], cfg: GRPOConfig
) -> None:
    """Unprocessable naming the first row of ``files`` (param name → file) whose prompt is too long for ``cfg``."""
    try:
        folder = tokenizer_folder(model, store, settings.state_dir / "tokenizers")
        counter = PromptCounter(folder, cfg.chat_template_kwargs) if folder is not None else None
    except StoreError:
        raise
    except Exception:  # an unreadable tokenizer here: the worker's own check still refuses a long prompt
        log.exception("prompt lengths of a %s job not checked: its tokenizer could not be loaded", model.id)
        return
    if counter is None:
        return
    import jinja2

    for param, file in files.items():
        rows = iter_rows(store, file.object_key)
        try:
            hit = first_over(counter, rows, cfg.max_prompt_tokens)
        except (jinja2.TemplateError, TypeError, KeyError, ValueError) as exc:  # the template refused a row
            raise Unprocessable(
                f"{param}: {model.id}'s chat template cannot render a row: {type(exc).__name__}: {exc}",
                param=f"{HP}.chat_template_kwargs" if cfg.chat_template_kwargs else param,
            ) from None
        if hit is not None:
            row, tokens = hit
            raise Unprocessable(
                f"{param} row {row}: the prompt is {tokens} tokens with {model.id}'s chat template, over "
                f"max_prompt_tokens={cfg.max_prompt_tokens}; shorten or drop the row, or raise max_prompt_tokens",
                param=param,
                code="prompt_too_long",
            )
