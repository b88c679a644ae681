"""scripts/gpu_wheels.py, offline: tiny wheels made here stand in for PyPI (``--no-index --find-links``).

The closure is checked against what the GPU machine is said to have (skipped, replaced when too old, assumed when
its version is unknown), with markers evaluated for its Python 3.12 (these tests run on 3.11), an extra, an
excluded package whose own dependency is dropped, and conflicts; then the set goes through parts of ~1 KiB each
and back, and the installed package imports. pip's own configuration on the machine running the tests is shut
out, so only the wheels made here are seen.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from scripts import gpu_wheels

PRESENT = "numpyish==1.0\npresentpkg==1.5\nnamesonly\n"
WHEELS: dict[tuple[str, str], list[str]] = {
    ("app", "1.0"): [
        "liba>=1.0",
        'libb; python_version >= "3.12"',  # true on the target only
        'libwin; sys_platform == "win32"',  # false on the target
        "libc[fast]",
        "numpyish>=2",  # present at 1.0: replaced
        "presentpkg>=1",  # present at 1.5: skipped
        "namesonly==3.0",  # present, version unknown: assumed
        "heavy",  # excluded, and heavydep (needed by it alone) with it
        "shared",
    ],
    ("liba", "1.0"): [],
    ("liba", "2.0"): [],
    ("libb", "1.0"): [],
    ("libc", "1.0"): ['libfast; extra == "fast"', 'libslow; extra == "slow"'],
    ("libfast", "1.0"): [],
    ("numpyish", "1.0"): [],
    ("numpyish", "2.0"): [],
    ("shared", "1.0"): [],
    ("heavy", "1.0"): ["heavydep", "shared"],
    ("heavydep", "1.0"): [],
    ("dep", "1.0"): [],
    ("dep", "2.0"): [],
    ("top", "1.0"): ["dep<2"],
    ("x1", "1.0"): ["dep==1.0"],
    ("pinner", "1.0"): ["dep==1.0", "mid"],  # mid 2.0 wants dep>=2: mid must go back to 1.0
    ("mid", "1.0"): ["dep"],
    ("mid", "2.0"): ["dep>=2"],
    ("x2", "1.0"): ["dep==2.0"],
}


def write_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A valid pure-Python wheel: a module that knows its version, METADATA, WHEEL and a RECORD with hashes."""
    info = f"{name}-{version}.dist-info"
    extras = sorted({r.split('extra == "')[1].rstrip('"') for r in requires if "extra ==" in r})
    metadata = [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}"]
    metadata += [f"Provides-Extra: {e}" for e in extras] + [f"Requires-Dist: {r}" for r in requires]
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": "\n".join(metadata) + "\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheels, with pip's configuration and PIP_* variables of this machine shut out for the module."""
    folder = tmp_path_factory.mktemp("index")
    for (name, version), requires in WHEELS.items():
        write_wheel(folder, name, version, requires)
    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("PIP_")]:
            mp.delenv(key)
        mp.setenv("PIP_CONFIG_FILE", os.devnull)
        yield folder


def download(index: Path, out: Path, *requires: str, exclude: tuple[str, ...] = (), pack: bool = True) -> int:
    present = out.parent / f"{out.name}-present.txt"
    present.write_text(PRESENT)
    argv = ["download", "--present", str(present), "--out", str(out), "--no-index", "--find-links", str(index)]
    argv += [a for r in requires for a in ("--require", r)] + [a for e in exclude for a in ("--exclude", e)]
    return gpu_wheels.main(argv + (["--part-mib", "0.001", "--lzma", "1"] if pack else ["--no-pack"]))


@pytest.fixture(scope="module")
def packed(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``app``'s closure, downloaded and packed into parts of ~1 KiB, its wheels as xz-compressed tars."""
    out = tmp_path_factory.mktemp("wheels")
    assert download(index, out, "app", exclude=("heavy",)) == 0
    return out


def test_closure_follows_the_target_not_this_machine(packed: Path) -> None:
    resolution = json.loads((packed / gpu_wheels.RESOLUTION).read_text())
    chosen = {w["name"]: w["version"] for w in resolution["wheels"]}
    assert chosen == {
        "app": "1.0",
        "liba": "2.0",  # the highest matching version
        "libb": "1.0",  # python_version >= "3.12" holds on the target though not here
        "libc": "1.0",
        "libfast": "1.0",  # from libc's extra "fast"; libslow's extra was not asked for
        "numpyish": "2.0",
        "shared": "1.0",  # still needed by app, though heavy is gone
    }
    assert [(r["name"], r["present_version"]) for r in resolution["present"]] == [("presentpkg", "1.5")]
    assert [(r["name"], r["specifier"]) for r in resolution["assumed"]] == [("namesonly", "==3.0")]
    assert [(r["name"], r["present_version"], r["version"]) for r in resolution["replaced"]] == [
        ("numpyish", "1.0", "2.0")
    ]
    assert [(r["name"], r["required_by"]) for r in resolution["excluded"]] == [("heavy", {"app 1.0": ""})]
    assert not resolution["unresolvable"]


@pytest.mark.parametrize(
    ("requires", "chosen"),
    [
        (("dep", "top"), {"dep": "1.0", "top": "1.0"}),  # dep 2.0, chosen first, is ruled out a level later
        (("pinner",), {"pinner": "1.0", "dep": "1.0", "mid": "1.0"}),  # mid backtracks from 2.0
    ],
)
def test_a_ruled_out_version_is_resolved_again(
    index: Path, tmp_path: Path, requires: tuple[str, ...], chosen: dict[str, str]
) -> None:
    assert download(index, tmp_path / "out", *requires, pack=False) == 0
    resolution = json.loads((tmp_path / "out" / gpu_wheels.RESOLUTION).read_text())
    assert {w["name"]: w["version"] for w in resolution["wheels"]} == chosen


@pytest.mark.parametrize(
    ("requires", "blamed"),
    [
        (("x1", "x2"), ("x1 1.0 requires dep==1.0", "x2 1.0 requires dep==2.0")),  # met on the same level
        (("dep==2.0", "top"), ("--require requires dep==2.0", "top 1.0 requires dep<2")),  # met levels apart
    ],
)
def test_a_conflict_names_both_sides(
    index: Path, tmp_path: Path, requires: tuple[str, ...], blamed: tuple[str, str]
) -> None:
    with pytest.raises(gpu_wheels.ResolutionError, match="conflict on ") as exc:
        download(index, tmp_path / "out", *requires, pack=False)
    assert all(b in str(exc.value) for b in blamed), exc.value


def test_a_missing_wheel_is_reported_not_packed(index: Path, tmp_path: Path) -> None:
    assert download(index, tmp_path / "out", "liba", "nosuchpkg>=1") == 1
    resolution = json.loads((tmp_path / "out" / gpu_wheels.RESOLUTION).read_text())
    assert [r["name"] for r in resolution["unresolvable"]] == ["nosuchpkg"]
    assert not (tmp_path / "out" / "parts").exists()


@pytest.mark.parametrize("preset", [1, 0])  # recompressed, and the wheels as they are
def test_parts_install_and_import(
    packed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], preset: int
) -> None:
    shutil.copytree(packed, tmp_path / "wheels", ignore=shutil.ignore_patterns("parts", "lzma-*"))
    assert gpu_wheels.main(["pack", str(tmp_path / "wheels"), "--part-mib", "0.001", "--lzma", str(preset)]) == 0
    manifest = json.loads((tmp_path / "wheels" / "parts" / gpu_wheels.MANIFEST).read_text())
    assert {w["encoding"] for w in manifest["wheels"]} == {"tar.xz-1" if preset else "wheel"}
    assert len(manifest["parts"]) > 3
    assert all(p["size"] <= manifest["part_bytes"] for p in manifest["parts"])
    assert sum(p["size"] for p in manifest["parts"]) == manifest["total_bytes"]
    assert [r["name"] for r in manifest["assumed"]] == ["namesonly"]
    parts = tmp_path / "gpu-parts"
    shutil.copytree(tmp_path / "wheels" / "parts", parts)  # where the device recipe copies them
    target = tmp_path / "site"
    for _ in range(2):  # a rerun replaces what the first run installed
        assert gpu_wheels.main(["install", "--parts", str(parts), "--target", str(target)]) == 0
    out = capsys.readouterr().out
    assert "WARNING: presentpkg (not installed) does not meet '>=1'" in out  # this is not the GPU machine
    assert f"export PYTHONPATH={target}" in out
    code = "import app, libb, libfast, numpyish; print(app.VERSION, numpyish.VERSION)"
    env = {**os.environ, "PYTHONPATH": str(target)}
    imported = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert imported.stdout.split() == ["1.0", "2.0"]
    assert not (target / "heavy").exists() and not (target / "heavydep").exists()


def test_a_missing_or_corrupt_part_is_named(packed: Path, tmp_path: Path) -> None:
    parts = tmp_path / "parts"  # pack's layout: install is pointed at the folder above
    shutil.copytree(packed / "parts", parts)
    (parts / "part-001").unlink()
    damaged = bytearray((parts / "part-002").read_bytes())
    damaged[10] ^= 0xFF
    (parts / "part-002").write_bytes(bytes(damaged))
    (parts / "part-003").write_bytes((parts / "part-003").read_bytes()[:-1])
    assert gpu_wheels.main(["verify", "--parts", str(parts)]) == 1
    with pytest.raises(SystemExit) as exc:
        gpu_wheels.main(["install", "--parts", str(tmp_path), "--target", str(tmp_path / "site")])
    message = str(exc.value)
    assert "part-001: missing" in message
    assert "part-002: sha256 differs" in message
    assert f"part-003: {(parts / 'part-003').stat().st_size} bytes, not" in message
    assert not (tmp_path / "site").exists()


def test_a_rebuilt_wheel_is_checked_against_its_record(tmp_path: Path) -> None:
    """encode and decode keep every file's bytes and mode; a file that does not match RECORD stops the install."""
    wheel = write_wheel(tmp_path, "tool", "1.0", [])
    with zipfile.ZipFile(wheel, "a") as zf:
        info = zipfile.ZipInfo("tool/run.sh")
        info.external_attr = 0o100755 << 16
        zf.writestr(info, "#!/bin/sh\n")  # not in RECORD
    gpu_wheels.encode(wheel, tmp_path / "tool.tar.xz", 1)
    with pytest.raises(SystemExit, match=r"\['tool/run.sh'\] not both in the rebuilt wheel and in its RECORD"):
        gpu_wheels.decode(tmp_path / "tool.tar.xz", tmp_path / "rebuilt.whl")
    wheel = write_wheel(tmp_path, "tool", "1.0", [])
    gpu_wheels.encode(wheel, tmp_path / "tool.tar.xz", 1)
    gpu_wheels.decode(tmp_path / "tool.tar.xz", tmp_path / "rebuilt.whl")
    with zipfile.ZipFile(wheel) as original, zipfile.ZipFile(tmp_path / "rebuilt.whl") as rebuilt:
        assert [(i.filename, original.read(i)) for i in original.infolist()] == [
            (i.filename, rebuilt.read(i)) for i in rebuilt.infolist()
        ]


def test_present_list_formats() -> None:
    columns = "Package            Version\n------------------ -------\nTorch 2.11.0+cu130\nhuggingface_hub 1.33.0\n"
    freeze = "torch==2.11.0+cu130\nHuggingFace-Hub==1.33.0\nmypkg @ file:///src/mypkg\n"
    as_json = json.dumps(
        [{"name": "torch", "version": "2.11.0+cu130"}, {"name": "huggingface_hub", "version": "1.33.0"}]
    )
    names = "# comment\ntorch\n\nhuggingface-hub  # trailing comment\n"
    for text in (columns, freeze, as_json):
        present = gpu_wheels.parse_present(text)
        assert str(present["torch"]) == "2.11.0+cu130" and str(present["huggingface-hub"]) == "1.33.0"
    assert gpu_wheels.parse_present(freeze)["mypkg"] is None
    assert gpu_wheels.parse_present(names) == {"torch": None, "huggingface-hub": None}
    assert len(gpu_wheels.parse_present(gpu_wheels.DEFAULT_PRESENT.read_text())) > 100
