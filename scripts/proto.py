"""`make proto` / `make check-proto`: the training API's protobuf module, kept equal to its ``.proto``.

The messages of the ``tinker`` SDK's protocol that the server reads or writes are declared in
``api/training_api/tinker.proto`` and compiled by ``protoc`` (grpcio-tools' build of it, a dev dependency) into
``tinker_pb2.py`` and ``tinker_pb2.pyi`` beside it, which are committed: the API's image needs only the protobuf
runtime. ``write`` regenerates them; ``check`` compiles into a temporary folder and exits 1 naming the files that
differ, so a ``.proto`` changed without regeneration fails ``make test``.

    python -m scripts.proto write
    python -m scripts.proto check
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROTO = Path("api/training_api/tinker.proto")  # relative to ROOT: also the file's name in the descriptor pool
OUTPUTS = ("tinker_pb2.py", "tinker_pb2.pyi")


def compile_into(out: Path) -> None:
    """``protoc`` on ``PROTO`` with the Python module and its type stub written under ``out``."""
    from grpc_tools import protoc

    args = ["protoc", f"-I{ROOT}", f"--python_out={out}", f"--pyi_out={out}", str(ROOT / PROTO)]
    if protoc.main(args) != 0:
        raise SystemExit(f"protoc failed on {PROTO}")


def write() -> int:
    compile_into(ROOT)
    print(f"wrote {', '.join(str(PROTO.parent / name) for name in OUTPUTS)}")
    return 0


def check() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        compile_into(Path(tmp))
        stale = [
            name
            for name in OUTPUTS
            if not (ROOT / PROTO.parent / name).is_file()
            or (Path(tmp) / PROTO.parent / name).read_bytes() != (ROOT / PROTO.parent / name).read_bytes()
        ]
    if stale:
        print(f"{', '.join(stale)} differ from {PROTO}: run `make proto` and commit the result", file=sys.stderr)
        return 1
    print(f"{PROTO.parent}/tinker_pb2.py and .pyi match {PROTO}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["write", "check"])
    args = ap.parse_args(argv)
    return write() if args.action == "write" else check()


if __name__ == "__main__":
    sys.exit(main())
