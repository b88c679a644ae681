"""Names of the training API's objects, built and parsed in one place.

The SDK builds a training run's id itself (``<session>:train:<n>``, docs/architecture/tinker-protocol.md §2), so
the server names runs and sampling clients the same way. A checkpoint answers as
``tinker://<run>/<weights|sampler_weights>/<name>``: the SDK splits it on ``/`` into exactly three parts, so neither
a run id nor a name may hold a slash. Its objects live under the project's prefix (runtime.keys).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from api.core.errors import InvalidRequest

CheckpointKind = Literal["training", "sampler"]
SEGMENT: dict[CheckpointKind, str] = {"training": "weights", "sampler": "sampler_weights"}
KIND_OF_SEGMENT: dict[str, CheckpointKind] = {v: k for k, v in SEGMENT.items()}


def segment(kind: str) -> str:
    """The path segment of a checkpoint kind as stored (``training_checkpoints.kind``, a plain string)."""
    return SEGMENT["training" if kind == "training" else "sampler"]


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def run_id(session_id: str, seq: int) -> str:
    return f"{session_id}:train:{seq}"


def sampler_id(session_id: str, seq: int) -> str:
    return f"{session_id}:sample:{seq}"


@dataclass(frozen=True)
class TinkerPath:
    run_id: str
    kind: CheckpointKind
    name: str

    def __str__(self) -> str:
        return f"tinker://{self.run_id}/{SEGMENT[self.kind]}/{self.name}"

    @classmethod
    def parse(cls, path: str, param: str = "path") -> TinkerPath:
        """A ``tinker://`` path, or a 400 naming ``param`` and the form it must have."""
        form = "tinker://<training run>/<weights|sampler_weights>/<name>"
        if not path.startswith("tinker://"):
            raise InvalidRequest(f"{path!r} is not a checkpoint path ({form})", param=param)
        parts = path[len("tinker://") :].split("/")
        if len(parts) != 3 or parts[1] not in KIND_OF_SEGMENT or not parts[0] or not parts[2]:
            raise InvalidRequest(f"{path!r} is not a checkpoint path ({form})", param=param)
        return cls(parts[0], KIND_OF_SEGMENT[parts[1]], parts[2])


def checked_name(name: str | None, param: str = "path") -> str:
    if name is None or not NAME_RE.match(name):
        raise InvalidRequest(
            f"checkpoint name {name!r}: 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit",
            param=param,
        )
    return name


def object_key(project_id: str, path: TinkerPath) -> str:
    """Where a checkpoint's tar lives: beside the project's other objects."""
    return f"projects/{project_id}/training/{path.run_id}/{SEGMENT[path.kind]}/{path.name}.tar"
