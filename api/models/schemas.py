"""OpenAI's ``model`` list: the base models workers can fine-tune, and the caller's fine-tuned models. A base
model carries the registry's metadata (extra fields: the ``openai`` SDK keeps them on the object)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from api.db.models import RegisteredModel

Serving = Literal["ready", "starting", "on_first_use", "unavailable", "not_served"]  # api.inference.router


class ModelFileInfo(BaseModel):
    name: str
    size: int
    sha256: str


class Model(BaseModel):
    object: Literal["model"] = "model"
    id: str
    created: int = Field(
        0, description="Unix seconds: when it was registered, or when a fine-tuned model's job finished."
    )
    owned_by: str = Field("system", description="'system' for a base model, the project's id for a fine-tuned one.")
    parent: str | None = Field(None, description="A fine-tuned model's base model.")
    serving: Serving | None = Field(
        None,
        description="How /v1/chat/completions serves it now: ready (a replica answers), starting (a worker is "
        "starting one), on_first_use (a request starts one), unavailable (its replicas do not answer), not_served.",
    )
    source: str | None = Field(
        None,
        description="A base model's origin: the folder, s3:// prefix or hf:// id it was registered from, or "
        "'catalog' (a folder the operator mounted).",
    )
    hub_id: str | None = Field(None, description="The model's hub id, what a trained adapter names as its base.")
    architecture: str | None = Field(None, description="config.json's architecture, e.g. Qwen2ForCausalLM.")
    parameter_count: int | None = Field(None, description="Parameters, from the safetensors headers.")
    dtype: str | None = Field(None, description="The weights' dtype as shipped.")
    context_length: int | None = Field(None, description="config.json's max_position_embeddings (or equivalent).")
    chat_template: bool | None = Field(None, description="Whether the tokenizer ships a chat template.")
    size_bytes: int | None = Field(None, description="Total size of the model's files.")
    sha256: str | None = Field(None, description="Digest over the files' sha256s: equal digests, equal models.")

    @classmethod
    def registered(cls, row: RegisteredModel) -> Model:
        return cls(
            id=row.id,
            created=row.created_at,
            source=row.source,
            hub_id=row.hub_id,
            architecture=row.architecture,
            parameter_count=row.parameter_count,
            dtype=row.dtype,
            context_length=row.context_length,
            chat_template=row.chat_template,
            size_bytes=row.size,
            sha256=row.digest,
        )


class ModelDetail(Model):
    """An admin's view of a registered model: every file with its hash, and the license text if shipped."""

    license: str | None = None
    object_prefix: str | None = Field(None, description="Where its files are in the object store.")
    files: list[ModelFileInfo] = Field(default_factory=list)

    @classmethod
    def detail(cls, row: RegisteredModel) -> ModelDetail:
        return cls(
            **Model.registered(row).model_dump(),
            license=row.license,
            object_prefix=row.object_prefix,
            files=[ModelFileInfo(**f) for f in row.files],
        )


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]


class ModelRegister(BaseModel):
    """``POST /v1/admin/models``: register a base model from a source the API process can read."""

    source: str = Field(
        min_length=1,
        max_length=1024,
        description="A folder on the API's machine, s3://bucket/prefix/, or hf://org/name[@revision] (resolved "
        "from the API machine's offline huggingface_hub cache; never downloaded).",
    )
    id: str | None = Field(None, max_length=128, description="The model's id (default: the folder or hub name).")
    hub_id: str | None = Field(None, max_length=256, description="org/name: what trained adapters name as base.")
