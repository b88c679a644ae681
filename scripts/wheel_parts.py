"""The parts half of scripts/gpu_wheels.py: wheels cut into parts of a fixed size with a manifest of sizes and
SHA-256 sums (``pack``), and on the GPU machine the check that every part is there and intact (``verify``), the
reassembly, each wheel rebuilt and checked against its RECORD, and ``pip install --target`` (``install``).

Stdlib and ``packaging`` only, like the resolver: this half runs on the GPU machine with nothing of this repo
installed. The stream and the compression are described in scripts/gpu_wheels.py's docstring.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import importlib.metadata
import io
import json
import lzma
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import IO, Any

from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PRESENT = ROOT / "bench" / "gpu_machine_packages.txt"
MANIFEST, RESOLUTION = "manifest.json", "resolution.json"  # resolution.json: download's choice, which pack sends
MIB, CHUNK = 1024 * 1024, 8 * 1024 * 1024


class ResolutionError(Exception):
    """The closure cannot be built: requirements in conflict, or pip answering in a way not understood."""


def dist_info(zf: zipfile.ZipFile, name: str) -> bytes:
    """A file of the wheel's ``*.dist-info`` folder (METADATA, RECORD), read without unpacking the wheel."""
    found = [n for n in zf.namelist() if n.count("/") == 1 and n.endswith(f".dist-info/{name}")]
    if len(found) != 1:
        raise ResolutionError(f"{zf.filename}: expected one .dist-info/{name}, found {found}")
    return zf.read(found[0])


def sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def stored(directory: Path, name: str, preset: int) -> tuple[Path, dict[str, Any]]:
    """The file that carries wheel ``name`` (the wheel, or its encoding, made once and kept) and its entry."""
    path, entry = directory / name, {"filename": name, "encoding": "wheel"}
    if preset:
        path, entry["encoding"] = directory / f"lzma-{preset}" / f"{sha256_file(path)}.tar.xz", f"tar.xz-{preset}"
        if not path.exists():  # encode writes elsewhere first, so a file found here is whole
            path.parent.mkdir(exist_ok=True)
            encode(directory / name, path.with_suffix(".tmp"), preset)
            path.with_suffix(".tmp").rename(path)
    return path, entry | {"size": path.stat().st_size, "sha256": sha256_file(path)}


def encode(wheel: Path, out: Path, preset: int) -> None:
    """The wheel's files, in its order and with their modes, as one tar compressed with xz (lzma)."""
    with (
        zipfile.ZipFile(wheel) as zf,
        lzma.open(out, "wb", preset=preset) as xz,
        tarfile.open(fileobj=xz, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        for info in zf.infolist():
            entry = tarfile.TarInfo(info.filename)
            entry.size, entry.mode = info.file_size, (info.external_attr >> 16) & 0o7777 or 0o644
            with zf.open(info) as src:
                tar.addfile(entry, src)


def decode(encoded: Path, wheel: Path) -> None:
    """Rebuild the wheel from ``encode``'s tar as an uncompressed zip, then check every file against RECORD."""
    with lzma.open(encoded) as xz, tarfile.open(fileobj=xz, mode="r|") as tar, zipfile.ZipFile(wheel, "w") as zf:
        for entry in tar:
            info, src = zipfile.ZipInfo(entry.name), tar.extractfile(entry)
            info.file_size, info.external_attr = entry.size, (0o100000 | entry.mode) << 16  # a regular file
            with src or io.BytesIO() as data, zf.open(info, "w") as dst:
                shutil.copyfileobj(data, dst, CHUNK)
    with zipfile.ZipFile(wheel) as zf:
        record = {row[0]: row[1] for row in csv.reader(dist_info(zf, "RECORD").decode().splitlines()) if row}
        names = [n for n in zf.namelist() if not n.endswith("/")]
        if unlisted := sorted(set(names) ^ set(record)):
            raise SystemExit(f"{wheel.name}: {unlisted} not both in the rebuilt wheel and in its RECORD")
        for name in (n for n in names if record[n]):  # RECORD's own row has no hash
            algorithm, _, expected = record[name].partition("=")
            digest = base64.urlsafe_b64encode(hashlib.new(algorithm, zf.read(name)).digest()).rstrip(b"=")
            if digest.decode() != expected:
                raise SystemExit(f"{wheel.name}: {name} differs from the wheel's RECORD after rebuilding")


def pack(directory: Path, part_bytes: int, preset: int) -> int:
    """Write ``DIR/parts``: the set's wheels (each encoded, with ``preset``) as one stream cut into ``part-NNN``
    files, and ``manifest.json``."""
    resolution_path = directory / RESOLUTION
    resolution = json.loads(resolution_path.read_text()) if resolution_path.exists() else {}
    names = sorted(w["filename"] for w in resolution.get("wheels", [])) or [p.name for p in directory.glob("*.whl")]
    with ProcessPoolExecutor() as pool:  # lzma is single-threaded: one wheel per core
        entries = list(pool.map(stored, [directory] * len(names), names, [preset] * len(names)))
    parts_dir = directory / "parts"
    parts_dir.mkdir(exist_ok=True)
    for stale in parts_dir.glob("part-*"):
        stale.unlink()
    stream, parts = Stream([path for path, _ in entries]), list[dict[str, Any]]()
    while True:
        path, digest = parts_dir / f"part-{len(parts):03d}", hashlib.sha256()
        with path.open("wb") as dst:
            if not (size := stream.copy(part_bytes, dst, digest)):
                path.unlink()
                break
        parts.append({"name": path.name, "size": size, "sha256": digest.hexdigest()})
    total = sum(entry["size"] for _, entry in entries)
    manifest = {"part_bytes": part_bytes, "total_bytes": total, "parts": parts, "wheels": [e for _, e in entries]}
    manifest |= {
        k: v for k, v in resolution.items() if k in ("requirements", "exclude", "present_list", "present", "assumed")
    }
    (parts_dir / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"{len(parts)} parts of at most {part_bytes / MIB:g} MiB in {parts_dir} ({total / 1e6:.1f} MB)")
    return 0


class Stream:
    """Files read back to back as one byte stream: pack cuts the entries into parts with it, install the parts
    back into entries."""

    def __init__(self, paths: list[Path]) -> None:
        self.pieces, self.rest = self._pieces(paths), memoryview(b"")

    @staticmethod
    def _pieces(paths: list[Path]) -> Iterator[memoryview]:
        for path in paths:
            with path.open("rb") as f:
                while chunk := f.read(CHUNK):
                    yield memoryview(chunk)

    def copy(self, n: int, dst: IO[bytes], digest: Any) -> int:
        """Copy the next ``n`` bytes (fewer at the end of the stream) to ``dst``; returns how many."""
        copied = 0
        while copied < n:
            if not len(self.rest):
                self.rest = next(self.pieces, memoryview(b""))
                if not len(self.rest):
                    break
            take, self.rest = self.rest[: n - copied], self.rest[n - copied :]
            dst.write(take)
            digest.update(take)
            copied += len(take)
        return copied


def load(parts: Path) -> tuple[Path, dict[str, Any], list[str]]:
    """The parts' folder (``parts``, or ``parts/parts`` as pack leaves it), the manifest, and one line per part
    that is missing, cut short or corrupt."""
    folder = parts if (parts / MANIFEST).exists() else parts / "parts"
    if not (folder / MANIFEST).exists():
        raise SystemExit(f"no {MANIFEST} in {parts} or {folder}")
    manifest, problems = json.loads((folder / MANIFEST).read_text()), []
    for p in manifest["parts"]:
        size = (folder / p["name"]).stat().st_size if (folder / p["name"]).exists() else None
        if size != p["size"]:
            problems.append(f"{p['name']}: " + (f"{size} bytes, not {p['size']}" if size is not None else "missing"))
        elif sha256_file(folder / p["name"]) != p["sha256"]:
            problems.append(f"{p['name']}: sha256 differs from the manifest (corrupt)")
    return folder, manifest, problems


def verify(args: argparse.Namespace) -> int:
    folder, manifest, problems = load(args.parts)
    print(f"{folder}: {len(manifest['parts'])} parts listed", *problems or ["all there, intact"], sep="\n")
    return 1 if problems else 0


def reassemble(folder: Path, manifest: dict[str, Any], out: Path) -> list[Path]:
    """Cut the concatenated parts back into the entries, check each one's sha256, and rebuild encoded wheels."""
    out.mkdir(parents=True, exist_ok=True)
    stream, wheels = Stream([folder / p["name"] for p in manifest["parts"]]), []
    for entry in manifest["wheels"]:
        wheel = out / entry["filename"]
        stored, digest = wheel if entry["encoding"] == "wheel" else wheel.with_suffix(".tar.xz"), hashlib.sha256()
        with stored.open("wb") as dst:
            stream.copy(entry["size"], dst, digest)
        if digest.hexdigest() != entry["sha256"]:
            raise SystemExit(f"{stored.name}: sha256 differs from the manifest after reassembly")
        if stored != wheel:
            decode(stored, wheel)
            stored.unlink()
        wheels.append(wheel)
    return wheels


def present_mismatches(manifest: dict[str, Any]) -> list[str]:
    """Requirements the resolution left to this interpreter's own packages that they do not meet."""
    found = []
    for row in manifest.get("present", []) + manifest.get("assumed", []):
        try:
            have: str | None = importlib.metadata.version(row["name"])
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have is None or not SpecifierSet(row["specifier"]).contains(have, prereleases=True):
            found.append(f"{row['name']} {have or '(not installed)'} does not meet '{row['specifier']}'")
    return found


def install(args: argparse.Namespace) -> int:
    folder, manifest, problems = load(args.parts)
    if problems:
        raise SystemExit("cannot install, parts are not all there:\n" + "\n".join(problems))
    wheels = reassemble(folder, manifest, folder / "wheels")
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir"]
    cmd += ["--upgrade", "--disable-pip-version-check", "--target", str(args.target), *map(str, wheels)]
    if subprocess.run(cmd).returncode:
        return 1
    for line in present_mismatches(manifest):
        print(f"WARNING: {line} (fix {DEFAULT_PRESENT.relative_to(ROOT)} and resolve again)")
    print(f"installed {len(wheels)} wheels into {args.target}; use them with:")
    print(f"export PYTHONPATH={args.target}${{PYTHONPATH:+:$PYTHONPATH}} PATH={args.target}/bin:$PATH")
    return 0
