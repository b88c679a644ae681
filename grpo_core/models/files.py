"""What a base model folder is, read without loading it: the registry's metadata and its refusals.

An HF folder is inspected from its files alone (``config.json``, the tokenizer files, the safetensors headers),
so the API can register a 8B model without torch, transformers or the weights in memory: the parameter count
comes from the tensor shapes in each safetensors header, the dtype from the config (else the headers). A folder
that a worker could not train (not a causal LM, no fast tokenizer, no weights) is refused with everything that is
missing named at once, so an operator fixes it in one go.
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Files a worker needs; everything else in a folder (README, LICENSE, generation_config.json …) is kept too.
CONFIG = "config.json"
TOKENIZER = "tokenizer.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")
_LICENSE_NAMES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "license", "license.txt", "COPYING")
_LICENSE_MAX = 64 * 1024
_CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
_BYTES_PER = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1}
_DTYPE_NAMES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64"}
_CHUNK = 1 << 20


class ModelFolderError(ValueError):
    """The folder is not a trainable causal LM; ``missing`` lists every reason (shown to the operator)."""

    def __init__(self, path: Path, missing: list[str]) -> None:
        self.missing = missing
        super().__init__(f"{path} is not a causal language model with a tokenizer: " + "; ".join(missing))


@dataclass(frozen=True)
class ModelFile:
    name: str  # relative path inside the folder, '/'-separated
    size: int
    sha256: str


@dataclass
class ModelInfo:
    """A model folder's registry metadata (api.db.models.RegisteredModel holds one per row)."""

    architecture: str
    model_type: str
    parameter_count: int | None
    dtype: str | None
    context_length: int | None
    chat_template: bool
    license: str | None
    files: list[ModelFile] = field(default_factory=list)

    @property
    def digest(self) -> str:
        """One sha256 over the files' names and hashes: the worker cache's key (same bytes, same key, whatever
        the id or where it came from)."""
        return manifest_digest(self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def manifest_digest(files: list[ModelFile]) -> str:
    h = hashlib.sha256()
    for f in sorted(files, key=lambda f: f.name):
        h.update(f"{f.name}\0{f.sha256}\n".encode())
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _safetensors_header(path: Path) -> dict[str, Any]:
    """The JSON header of a safetensors file (8-byte little-endian length, then JSON): shapes without weights."""
    with path.open("rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path.name}: not a safetensors file")
        (n,) = struct.unpack("<Q", raw)
        if n > 100 * 1024 * 1024:
            raise ValueError(f"{path.name}: safetensors header of {n} bytes")
        header: dict[str, Any] = json.loads(fh.read(n))
    return header


def _count_parameters(weights: list[Path]) -> tuple[int | None, str | None]:
    """Parameters and the commonest tensor dtype over the safetensors files (None for pickled .bin files)."""
    total, by_dtype = 0, dict[str, int]()
    for path in weights:
        if path.suffix != ".safetensors":
            return None, None
        for name, meta in _safetensors_header(path).items():
            if name == "__metadata__":
                continue
            n = math.prod(meta["shape"])
            total += n
            by_dtype[meta["dtype"]] = by_dtype.get(meta["dtype"], 0) + n
    common = max(by_dtype, key=lambda k: by_dtype[k]) if by_dtype else None
    return total, _DTYPE_NAMES.get(common or "", common and common.lower())


def read_config(path: Path) -> dict[str, Any]:
    cfg: dict[str, Any] = json.loads((path / CONFIG).read_text())
    return cfg


def _chat_template(path: Path) -> bool:
    if (path / "chat_template.jinja").is_file() or (path / "chat_template.json").is_file():
        return True
    tc = path / "tokenizer_config.json"
    if tc.is_file():
        try:
            return bool(json.loads(tc.read_text()).get("chat_template"))
        except ValueError:
            return False
    return False


def _license(path: Path) -> str | None:
    for name in _LICENSE_NAMES:
        p = path / name
        if p.is_file():
            return p.read_text(errors="replace")[:_LICENSE_MAX]
    readme = path / "README.md"
    if readme.is_file():  # a model card's front matter: "license: apache-2.0"
        text = readme.read_text(errors="replace")
        if text.startswith("---"):
            for line in text.split("---", 2)[1].splitlines():
                if line.strip().startswith("license:"):
                    return line.split(":", 1)[1].strip() or None
    return None


def model_files(path: Path) -> list[Path]:
    """The files of a folder that belong to the model (not hidden ones, not caches), sorted."""
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )


def _weight_files(path: Path) -> list[Path]:
    """The weights transformers loads: the shards a ``model.safetensors.index.json`` names when there is one (a
    folder may also ship another copy, like Mistral's ``consolidated.safetensors``), else every safetensors file,
    else the pickled ``pytorch_model*.bin`` files."""
    index = path / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        except (ValueError, KeyError, AttributeError):
            shards = []
        listed = [path / name for name in shards if (path / name).is_file()]
        if listed and len(listed) == len(shards):
            return listed
    return sorted(path.glob("*.safetensors")) or sorted(path.glob("pytorch_model*.bin"))


def inspect_model_folder(path: Path) -> ModelInfo:
    """The metadata of the HF folder ``path``; ModelFolderError naming everything missing when a worker could not
    train it. Weights are never loaded: shapes come from the safetensors headers."""
    missing: list[str] = []
    if not path.is_dir():
        raise ModelFolderError(path, ["no such folder"])
    cfg: dict[str, Any] = {}
    if not (path / CONFIG).is_file():
        missing.append("config.json (the model's configuration)")
    else:
        try:
            cfg = read_config(path)
        except ValueError as exc:
            missing.append(f"a readable config.json ({exc})")
    archs = [a for a in cfg.get("architectures") or [] if isinstance(a, str)]
    if cfg and not any(a.endswith("ForCausalLM") for a in archs):
        missing.append(
            f"a causal LM architecture in config.json (architectures={archs or None}; a worker trains "
            "*ForCausalLM models)"
        )
    if not (path / TOKENIZER).is_file():
        missing.append(
            "tokenizer.json (a fast tokenizer; for a sentencepiece-only folder, save one with "
            "transformers' AutoTokenizer.from_pretrained(p).save_pretrained(p))"
        )
    weights = _weight_files(path)
    if not weights:
        missing.append("weights (*.safetensors or pytorch_model*.bin)")
    if missing:
        raise ModelFolderError(path, missing)
    try:
        n_params, header_dtype = _count_parameters(weights)
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelFolderError(path, [f"readable safetensors weights ({exc})"]) from None
    dtype = cfg.get("torch_dtype") or cfg.get("dtype") or header_dtype
    text_cfg = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else {}
    context = next(
        (int(v) for k in _CONTEXT_KEYS for v in (cfg.get(k), (text_cfg or {}).get(k)) if isinstance(v, int)), None
    )
    unused = {p for p in path.glob("*.safetensors") if p not in weights}  # e.g. Mistral's consolidated.safetensors
    files = [
        ModelFile(p.relative_to(path).as_posix(), p.stat().st_size, sha256_file(p))
        for p in model_files(path)
        if p not in unused
    ]
    return ModelInfo(
        architecture=next(a for a in archs if a.endswith("ForCausalLM")),
        model_type=str(cfg.get("model_type", "")),
        parameter_count=n_params,
        dtype=str(dtype) if dtype else None,
        context_length=context,
        chat_template=_chat_template(path),
        license=_license(path),
        files=files,
    )
