# Generated from openapi.json by `make openapi` (scripts/openapi.py): do not edit by hand.
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.model_detail_serving_type_0 import ModelDetailServingType0, check_model_detail_serving_type_0
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.model_file_info import ModelFileInfo


T = TypeVar("T", bound="ModelDetail")


@_attrs_define
class ModelDetail:
    """An admin's view of a registered model: every file with its hash, and the license text if shipped.

    Attributes:
        id (str):
        architecture (None | str | Unset): config.json's architecture, e.g. Qwen2ForCausalLM.
        chat_template (bool | None | Unset): Whether the tokenizer ships a chat template.
        context_length (int | None | Unset): config.json's max_position_embeddings (or equivalent).
        created (int | Unset): Unix seconds: when it was registered, or when a fine-tuned model's job finished. Default:
            0.
        dtype (None | str | Unset): The weights' dtype as shipped.
        files (list[ModelFileInfo] | Unset):
        hub_id (None | str | Unset): The model's hub id, what a trained adapter names as its base.
        license_ (None | str | Unset):
        object_ (Literal['model'] | Unset):  Default: 'model'.
        object_prefix (None | str | Unset): Where its files are in the object store.
        owned_by (str | Unset): 'system' for a base model, the project's id for a fine-tuned one. Default: 'system'.
        parameter_count (int | None | Unset): Parameters, from the safetensors headers.
        parent (None | str | Unset): A fine-tuned model's base model.
        serving (ModelDetailServingType0 | None | Unset): How /v1/chat/completions serves it now: ready (a replica
            answers), starting (a worker is starting one), on_first_use (a request starts one), unavailable (its replicas do
            not answer), not_served.
        sha256 (None | str | Unset): Digest over the files' sha256s: equal digests, equal models.
        size_bytes (int | None | Unset): Total size of the model's files.
        source (None | str | Unset): A base model's origin: the folder, s3:// prefix or hf:// id it was registered from,
            or 'catalog' (a folder the operator mounted).
    """

    id: str
    architecture: None | str | Unset = UNSET
    chat_template: bool | None | Unset = UNSET
    context_length: int | None | Unset = UNSET
    created: int | Unset = 0
    dtype: None | str | Unset = UNSET
    files: list[ModelFileInfo] | Unset = UNSET
    hub_id: None | str | Unset = UNSET
    license_: None | str | Unset = UNSET
    object_: Literal["model"] | Unset = "model"
    object_prefix: None | str | Unset = UNSET
    owned_by: str | Unset = "system"
    parameter_count: int | None | Unset = UNSET
    parent: None | str | Unset = UNSET
    serving: ModelDetailServingType0 | None | Unset = UNSET
    sha256: None | str | Unset = UNSET
    size_bytes: int | None | Unset = UNSET
    source: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        architecture: None | str | Unset
        if isinstance(self.architecture, Unset):
            architecture = UNSET
        else:
            architecture = self.architecture

        chat_template: bool | None | Unset
        if isinstance(self.chat_template, Unset):
            chat_template = UNSET
        else:
            chat_template = self.chat_template

        context_length: int | None | Unset
        if isinstance(self.context_length, Unset):
            context_length = UNSET
        else:
            context_length = self.context_length

        created = self.created

        dtype: None | str | Unset
        if isinstance(self.dtype, Unset):
            dtype = UNSET
        else:
            dtype = self.dtype

        files: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.files, Unset):
            files = []
            for files_item_data in self.files:
                files_item = files_item_data.to_dict()
                files.append(files_item)

        hub_id: None | str | Unset
        if isinstance(self.hub_id, Unset):
            hub_id = UNSET
        else:
            hub_id = self.hub_id

        license_: None | str | Unset
        if isinstance(self.license_, Unset):
            license_ = UNSET
        else:
            license_ = self.license_

        object_ = self.object_

        object_prefix: None | str | Unset
        if isinstance(self.object_prefix, Unset):
            object_prefix = UNSET
        else:
            object_prefix = self.object_prefix

        owned_by = self.owned_by

        parameter_count: int | None | Unset
        if isinstance(self.parameter_count, Unset):
            parameter_count = UNSET
        else:
            parameter_count = self.parameter_count

        parent: None | str | Unset
        if isinstance(self.parent, Unset):
            parent = UNSET
        else:
            parent = self.parent

        serving: None | str | Unset
        if isinstance(self.serving, Unset):
            serving = UNSET
        elif isinstance(self.serving, str):
            serving = self.serving
        else:
            serving = self.serving

        sha256: None | str | Unset
        if isinstance(self.sha256, Unset):
            sha256 = UNSET
        else:
            sha256 = self.sha256

        size_bytes: int | None | Unset
        if isinstance(self.size_bytes, Unset):
            size_bytes = UNSET
        else:
            size_bytes = self.size_bytes

        source: None | str | Unset
        if isinstance(self.source, Unset):
            source = UNSET
        else:
            source = self.source

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
            }
        )
        if architecture is not UNSET:
            field_dict["architecture"] = architecture
        if chat_template is not UNSET:
            field_dict["chat_template"] = chat_template
        if context_length is not UNSET:
            field_dict["context_length"] = context_length
        if created is not UNSET:
            field_dict["created"] = created
        if dtype is not UNSET:
            field_dict["dtype"] = dtype
        if files is not UNSET:
            field_dict["files"] = files
        if hub_id is not UNSET:
            field_dict["hub_id"] = hub_id
        if license_ is not UNSET:
            field_dict["license"] = license_
        if object_ is not UNSET:
            field_dict["object"] = object_
        if object_prefix is not UNSET:
            field_dict["object_prefix"] = object_prefix
        if owned_by is not UNSET:
            field_dict["owned_by"] = owned_by
        if parameter_count is not UNSET:
            field_dict["parameter_count"] = parameter_count
        if parent is not UNSET:
            field_dict["parent"] = parent
        if serving is not UNSET:
            field_dict["serving"] = serving
        if sha256 is not UNSET:
            field_dict["sha256"] = sha256
        if size_bytes is not UNSET:
            field_dict["size_bytes"] = size_bytes
        if source is not UNSET:
            field_dict["source"] = source

        return field_dict

    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.model_file_info import ModelFileInfo  # noqa: PLC0415

        d = dict(src_dict)
        id = d.pop("id")

        def _parse_architecture(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        architecture = _parse_architecture(d.pop("architecture", UNSET))

        def _parse_chat_template(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        chat_template = _parse_chat_template(d.pop("chat_template", UNSET))

        def _parse_context_length(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        context_length = _parse_context_length(d.pop("context_length", UNSET))

        created = d.pop("created", UNSET)

        def _parse_dtype(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        dtype = _parse_dtype(d.pop("dtype", UNSET))

        _files = d.pop("files", UNSET)
        files: list[ModelFileInfo] | Unset = UNSET
        if _files is not UNSET:
            files = []
            for files_item_data in _files:
                files_item = ModelFileInfo.from_dict(files_item_data)

                files.append(files_item)

        def _parse_hub_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        hub_id = _parse_hub_id(d.pop("hub_id", UNSET))

        def _parse_license_(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        license_ = _parse_license_(d.pop("license", UNSET))

        object_ = cast(Literal["model"] | Unset, d.pop("object", UNSET))
        if object_ != "model" and not isinstance(object_, Unset):
            raise ValueError(f"object must match const 'model', got '{object_}'")

        def _parse_object_prefix(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        object_prefix = _parse_object_prefix(d.pop("object_prefix", UNSET))

        owned_by = d.pop("owned_by", UNSET)

        def _parse_parameter_count(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        parameter_count = _parse_parameter_count(d.pop("parameter_count", UNSET))

        def _parse_parent(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        parent = _parse_parent(d.pop("parent", UNSET))

        def _parse_serving(data: object) -> ModelDetailServingType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                serving_type_0 = check_model_detail_serving_type_0(data)

                return serving_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(ModelDetailServingType0 | None | Unset, data)

        serving = _parse_serving(d.pop("serving", UNSET))

        def _parse_sha256(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        sha256 = _parse_sha256(d.pop("sha256", UNSET))

        def _parse_size_bytes(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        size_bytes = _parse_size_bytes(d.pop("size_bytes", UNSET))

        def _parse_source(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        source = _parse_source(d.pop("source", UNSET))

        model_detail = cls(
            id=id,
            architecture=architecture,
            chat_template=chat_template,
            context_length=context_length,
            created=created,
            dtype=dtype,
            files=files,
            hub_id=hub_id,
            license_=license_,
            object_=object_,
            object_prefix=object_prefix,
            owned_by=owned_by,
            parameter_count=parameter_count,
            parent=parent,
            serving=serving,
            sha256=sha256,
            size_bytes=size_bytes,
            source=source,
        )

        model_detail.additional_properties = d
        return model_detail

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
