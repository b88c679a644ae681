"""Carry Python packages (vLLM and what it needs) to a GPU machine without network that takes files in parts.

The test machine this was written for takes at most 64 MiB per call besides the work tree, and each call costs
20-30 s of a small time budget, so only what it lacks is sent, in parts of at most ~55 MiB kept on the warm
machine in ``/tmp/gpu-parts`` until a last call installs them. ``download`` resolves the dependency closure for
*its* interpreter (CPython 3.12, Linux x86-64, glibc <= 2.39; markers are evaluated for it, not for this
machine), skips what a package on its list (``bench/gpu_machine_packages.txt``) already meets, and leaves out
each ``--exclude`` (heavy packages the intended use never imports; ``DEFAULT_EXCLUDE`` lists vLLM's) with what
only it needed. A requirements file (``bench/gpu_requirements.txt``: what ``make test-gpu`` and the GPU benches
need) may hold ``--exclude NAME`` lines.

    python -m scripts.gpu_wheels download --out DIR [--present FILE] [--requirements bench/gpu_requirements.txt]
        [--require vllm==0.26.0 ...] [--exclude NAME ...] [--no-default-excludes]
        [--find-links DIR] [--no-index] [--index-url URL] [--lzma 6]                    # packs unless --no-pack
    python -m scripts.gpu_wheels pack DIR [--part-mib 55] [--lzma 6]      # writes DIR/parts
    python -m scripts.gpu_wheels verify --parts /tmp/gpu-parts           # there: which parts are missing
    python -m scripts.gpu_wheels install --parts /tmp/gpu-parts --target /tmp/gpu-parts/site

Device recipe, one call per part, with DIR outside the repo: with ``/.gpu-parts/`` in ``.git/info/exclude``,
put one ``part-NNN`` and ``manifest.json`` alone in the repo's ``.gpu-parts/``, carry ``[".gpu-parts"]``, run
``mkdir -p /tmp/gpu-parts && cp .gpu-parts/* /tmp/gpu-parts/ && python3 -m scripts.gpu_wheels verify``; after
the last part, ``install``, then the work with ``PYTHONPATH=/tmp/gpu-parts/site``. /tmp/gpu-parts lasts only
while the machine stays warm: send a set in one sitting.

The parts are one stream cut at the part size; ``manifest.json`` has each part's and each entry's size and
sha256, so a lost or damaged part is named before anything is installed. A wheel is a zip whose deflate leaves
about a third of vLLM's bytes that lzma removes (``pack`` prints the total for any ``--lzma``), so by default it
travels as an xz-compressed tar of its files and is rebuilt there as a stored zip, each file checked against
the wheel's RECORD before pip sees it. Stdlib and ``packaging`` only: the installer runs there with nothing of
this repo installed.
"""

from __future__ import annotations

import argparse
import email.parser
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from scripts.wheel_parts import (  # noqa: F401  (decode, encode, MANIFEST: the tests and callers use them here)
    DEFAULT_PRESENT,
    MANIFEST,
    MIB,
    RESOLUTION,
    ROOT,
    ResolutionError,
    decode,
    dist_info,
    encode,
    install,
    pack,
    verify,
)

DEFAULT_REQUIRE = ("vllm==0.26.0",)
# What vLLM 0.26 requires and this service's use of it (text generation with ``vllm.LLM`` and ``vllm serve``, dense
# models, LoRA) never imports: video decoding, JIT kernel stacks for other paths (TileLang, the CuTe DSL, quantized
# linear layers, MLA attention), the Mistral tokenizer, the MCP and Anthropic front ends. Each is imported inside a
# function or a try (read from vLLM 0.26.0's sources); together 577 of the 934 MB the whole closure weighs.
# Left out unless --no-default-excludes: keep humming-kernels for FP8/INT8 quantized models.
DEFAULT_EXCLUDE = (
    "pynvvideocodec",
    "torchcodec",
    "tilelang",
    "humming-kernels",
    "tokenspeed-mla",
    "nvidia-cutlass-dsl",
    "quack-kernels",
    "mistral-common",
    "mcp",
    "anthropic",
)
GPU_PARTS = "/tmp/gpu-parts"  # where the device recipe stashes parts between calls
PIP_INDEX = ("--find-links", "--index-url", "--extra-index-url")  # download's options that go to pip as given
MAX_PASSES = 100  # the closure is built again after each ruled-out version or backtracking step

# The GPU machine's interpreter: Python 3.12.3 (Ubuntu 24.04's), so glibc 2.39 bounds the manylinux tags.
TARGET_PYTHON, TARGET_GLIBC = "3.12", (2, 39)
TARGET_ENV = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": "3.12.3",
    "python_version": TARGET_PYTHON,
    "sys_platform": "linux",
}


def target_platforms() -> list[str]:
    """pip matches ``--platform`` tags exactly, so each manylinux glibc the target loads is named, newest first."""
    tags = [f"manylinux_{TARGET_GLIBC[0]}_{minor}_x86_64" for minor in range(TARGET_GLIBC[1], 4, -1)]
    return [*tags, "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def parse_present(text: str) -> dict[str, Version | None]:
    """Packages on the target by normalised name -> version (None: known by name only). Reads ``pip list``
    columns, ``--format=freeze``, ``--format=json`` and plain names, one a line; ``#`` starts a comment."""
    if text.lstrip().startswith("["):
        return {canonicalize_name(p["name"]): _version(p.get("version")) for p in json.loads(text)}
    present: dict[str, Version | None] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or set(line) <= {"-", " "} or line.split()[:2] == ["Package", "Version"]:
            continue
        if "==" in line:
            name, version = line.split("==", 1)
        else:  # columns (name, version, maybe an editable location), "name @ url" from freeze, or a name alone
            tokens = line.split()
            name, version = tokens[0], (tokens[1] if len(tokens) > 1 and tokens[1] != "@" else "")
        present[canonicalize_name(name.strip())] = _version(version or None)
    return present


def _version(text: str | None) -> Version | None:
    try:
        return Version(text.strip()) if text else None
    except InvalidVersion:
        return None


def wheel_requires(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        metadata = email.parser.BytesParser().parsebytes(dist_info(zf, "METADATA"), headersonly=True)
    return metadata.get_all("Requires-Dist") or []


def marker_holds(marker: Marker | None, extras: Set[str]) -> bool:
    """Whether a requirement applies on the target for any of ``extras`` ("" standing for none requested)."""
    return marker is None or any(marker.evaluate({**TARGET_ENV, "extra": e}) for e in sorted(extras))


@dataclass
class Pip:
    """``pip download`` for the target: binary wheels only, no dependencies (the closure is ours to build).
    Answers are remembered, so a closure built again asks pip only what it has not asked yet."""

    dest: Path
    index_args: list[str] = field(default_factory=list)
    known: dict[str, str | subprocess.CalledProcessError] = field(default_factory=dict)

    def download(self, specs: dict[str, str]) -> dict[str, str]:
        """Download ``name -> name+specifier`` in one pip call; returns name -> wheel filename. Raises
        CalledProcessError (pip's output attached) when one of them has no match."""
        for known in (self.known.get(spec) for spec in specs.values()):
            if isinstance(known, subprocess.CalledProcessError):
                raise known
        if ask := {name: spec for name, spec in specs.items() if spec not in self.known}:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--progress-bar=off"]
            cmd += ["--disable-pip-version-check", "--python-version", TARGET_PYTHON, "--implementation", "cp"]
            cmd += ["--abi", "cp" + TARGET_PYTHON.replace(".", ""), "--dest", str(self.dest), *self.index_args]
            cmd += [a for p in target_platforms() for a in ("--platform", p)]
            result = subprocess.run([*cmd, *ask.values()], capture_output=True, text=True)
            if result.returncode:
                error = subprocess.CalledProcessError(result.returncode, cmd, result.stdout, result.stderr)
                self.known |= {spec: error for spec in ask.values()} if len(ask) == 1 else {}
                raise error
            # pip names each file it saved or found in --dest already: exactly this call's choices.
            saved = re.findall(r"^\s*(?:Saved|File was already downloaded) (.+\.whl)\s*$", result.stdout, re.M)
            found = {str(canonicalize_name(parse_wheel_filename(Path(s).name)[0])): Path(s).name for s in saved}
            if missing := sorted(set(ask) - set(found)):
                raise ResolutionError(f"pip reported no wheel for {missing}:\n{result.stdout}")
            self.known |= {spec: found[name] for name, spec in ask.items()}
        return {name: str(self.known[spec]) for name, spec in specs.items()}


@dataclass
class Node:
    """What the closure decided for one package, with each requirer's specifier (for reports and conflicts)."""

    name: str
    kind: str  # "present" | "assumed" (present, version unknown) | "download" | "excluded" | "unresolvable"
    depth: int  # levels below the --require roots
    present_version: Version | None
    required_by: dict[str, str]  # "name version", "--require" or "backtracking (why)" -> specifier
    spec: SpecifierSet = field(default_factory=SpecifierSet)
    version: Version | None = None
    filename: str | None = None
    extras: set[str] = field(default_factory=set)  # requested by any requirer
    done: set[str] = field(default_factory=set)  # extras whose requirements were followed ("": the base ones)
    emitted: set[str] = field(default_factory=set)  # requirement lines followed
    error: str = ""


class _Restart(Exception):
    """Build the closure again, avoiding ``version`` of ``name`` (because ``why``), or applying ``by``'s demand."""

    def __init__(self, name: str, by: str, spec: str, version: str = "", why: str = "") -> None:
        self.name, self.by, self.spec, self.version, self.why = name, by, spec, version, why


class Resolver:
    """Breadth-first closure, deterministic: each level is taken in sorted order and all specifiers seen for a
    name are combined before pip picks the highest version meeting them. A demand that rules out a version
    already picked is kept, and the closure is built again with it applied from the start, so nothing a
    discarded version required survives. When no version meets all demands, the requirer whose demand alone
    is in the way and sits deepest is moved to a lower version (pip's resolver backtracks the same way); when
    there is none, the conflict is reported with its sides."""

    def __init__(self, present: dict[str, Version | None], exclude: Set[str], pip: Pip) -> None:
        self.present, self.exclude, self.pip = present, exclude, pip
        self.demands: dict[str, dict[str, str]] = {}  # name -> requirer -> specifier, kept across passes
        self.avoid: dict[str, dict[str, str]] = {}  # name -> version -> why
        self.depth: dict[str, int] = {}  # "name version" of every version picked so far -> its depth

    def resolve(self, roots: list[str]) -> dict[str, Node]:
        for _ in range(MAX_PASSES):
            try:
                return self._pass(roots)
            except _Restart as r:
                if r.version:
                    print(f"backtracking: avoiding {r.name} {r.version}: {r.why}", flush=True)
                    self.avoid.setdefault(r.name, {})[r.version] = r.why
                    for demands in self.demands.values():  # what that version demanded no longer stands
                        demands.pop(f"{r.name} {r.version}", None)
                else:
                    print(f"starting over: {r.by} requires {r.name}{r.spec}", flush=True)
                    self.demands.setdefault(r.name, {})[r.by] = r.spec
        raise ResolutionError(f"no stable resolution after {MAX_PASSES} passes")

    def _pass(self, roots: list[str]) -> dict[str, Node]:
        nodes: dict[str, Node] = {}
        level = [(req, "--require") for req in map(Requirement, roots) if marker_holds(req.marker, {""})]
        for depth in range(MAX_PASSES * 10):
            if not level:
                return nodes
            for req, by in sorted(level, key=lambda item: (canonicalize_name(item[0].name), str(item[0]), item[1])):
                self._add(nodes, req, by, depth)
            self._fetch(nodes, sorted(n for n, node in nodes.items() if node.kind == "download" and not node.filename))
            level = [item for name in sorted(nodes) for item in self._expand(nodes[name])]
        raise ResolutionError("the dependency graph does not end")

    def _add(self, nodes: dict[str, Node], req: Requirement, by: str, depth: int) -> None:
        if req.url:
            raise ResolutionError(f"{by} requires {req}: URL requirements are not supported")
        name = canonicalize_name(req.name)
        if (node := nodes.get(name)) is None:
            have = self.present.get(name)
            kind = "excluded" if name in self.exclude else "download" if name not in self.present else "present"
            demands = self.demands.get(name, {}) | {
                f"backtracking ({why})": f"!={v}" for v, why in self.avoid.get(name, {}).items()
            }
            node = nodes[name] = Node(name, "assumed" if kind == "present" and not have else kind, depth, have, demands)
            node.spec = SpecifierSet(",".join(s for s in demands.values() if s))
        node.spec &= req.specifier
        node.required_by[by] = str(req.specifier)
        node.extras |= set(req.extras)
        if node.kind == "present" and not node.spec.contains(node.present_version or "", prereleases=True):
            node.kind = "download"  # the target has another version: this one replaces it (report: REPLACED)
        if node.kind == "download" and node.version and not req.specifier.contains(node.version, prereleases=True):
            raise _Restart(name, by, str(req.specifier))

    def _fetch(self, nodes: dict[str, Node], names: list[str]) -> None:
        if not names:
            return
        print(f"downloading {len(names)}: {' '.join(names)}", flush=True)
        try:
            chosen = self.pip.download({n: n + str(nodes[n].spec) for n in names})
        except subprocess.CalledProcessError:
            chosen = {}  # one of them has no match: find which, one at a time
            for name in names:
                try:
                    chosen |= self.pip.download({name: name + str(nodes[name].spec)})
                except subprocess.CalledProcessError as exc:
                    self._no_match(nodes[name], exc.stderr or "")
        for name, filename in chosen.items():
            nodes[name].filename, nodes[name].version = filename, parse_wheel_filename(filename)[1]
            self.depth.setdefault(f"{name} {nodes[name].version}", nodes[name].depth)

    def _no_match(self, node: Node, stderr: str) -> None:
        """No wheel meets ``node.spec``: backtrack a requirer, report a conflict, or mark the node unresolvable.
        pip's error lists the versions there are for the target, so each demand can be tried without."""
        listed = re.search(r"\(from versions: ([^)]*)\)", stderr)
        versions = [v for v in map(_version, listed.group(1).split(", ") if listed else []) if v]
        demands = {by: s for by, s in node.required_by.items() if s}
        if versions and (len(demands) > 1 or any(by.startswith("backtracking") for by in demands)):

            def met_without(by: str) -> bool:
                return any(SpecifierSet(",".join(s for b, s in demands.items() if b != by)).filter(versions))

            sides = {by: f"{by} requires {node.name}{s}" for by, s in sorted(demands.items())}
            if movable := [by for by in demands if by in self.depth and met_without(by)]:
                by = max(movable, key=lambda b: (self.depth[b], b))
                others = "; ".join(side for b, side in sides.items() if b != by)
                raise _Restart(by.split()[0], by, "", by.split()[1], f"{sides[by]}, against {others}")
            raise ResolutionError(f"conflict on {node.name}: {'; '.join(sides.values())}; no wheel meets them all")
        lines = [ln for ln in stderr.splitlines() if ln.startswith("ERROR")]
        node.kind, node.error = "unresolvable", lines[-1] if lines else stderr.strip()[-300:]

    def _expand(self, node: Node) -> list[tuple[Requirement, str]]:
        """Requirements of a downloaded wheel, for the extras asked of it. A package the target has is not
        followed: its requirements are the target's business, and those its extras add are only reported."""
        if node.kind in ("present", "assumed") and node.extras and (note := str(sorted(node.extras))) not in node.done:
            print(f"NOTE: {node.name} is present; what its extras {note} add is not followed")
            node.done.add(note)
        if node.kind != "download" or not (extras := {"", *node.extras} - node.done):
            return []
        node.done |= extras
        found = []
        for line in wheel_requires(self.pip.dest / str(node.filename)):
            if line not in node.emitted and marker_holds((req := Requirement(line)).marker, extras):
                node.emitted.add(line)
                found.append((req, f"{node.name} {node.version}"))
        return found


LINES = {  # how report() prints each kind of decision
    "present": "present:      {n.name} {n.present_version} meets '{n.spec}' ({by})",
    "assumed": "ASSUMED:      {n.name} (version unknown) taken to meet '{n.spec}' ({by})",
    "replaced": "REPLACED:     {n.name} {n.present_version} does not meet '{n.spec}': sending {n.version} ({by})",
    "excluded": "EXCLUDED:     {n.name}{n.spec} ({by}); what only it needed is left out too",
    "unresolvable": "UNRESOLVABLE: {n.name}{n.spec} ({by}): {n.error}",
}


def report(nodes: dict[str, Node], dest: Path) -> dict[str, Any]:
    """The resolution as lines on stdout and as data (resolution.json)."""
    groups: dict[str, list[dict[str, Any]]] = {kind: [] for kind in [*LINES, "wheels"]}
    for n in (nodes[name] for name in sorted(nodes)):
        row: dict[str, Any] = {"name": n.name, "version": str(n.version or ""), "specifier": str(n.spec)}
        row |= {"present_version": str(n.present_version or ""), "required_by": n.required_by, "error": n.error}
        if n.kind == "download":
            groups["wheels"].append(row | {"filename": n.filename, "size": (dest / str(n.filename)).stat().st_size})
        if (kind := "replaced" if n.kind == "download" and n.present_version else n.kind) in LINES:
            groups[kind].append(row)
            by = ", ".join(f"{b} ({s or 'any'})" for b, s in sorted(n.required_by.items()))
            print(LINES[kind].format(n=n, by=by))
    for w in groups["wheels"]:
        print(f"wheel: {w['size'] / 1e6:9.1f} MB  {w['filename']}")
    total = sum(w["size"] for w in groups["wheels"])
    print(f"{len(groups['wheels'])} wheels, {total / 1e6:.1f} MB")
    return {"total_bytes": total, **groups}


def download(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    text = args.present.read_text(encoding="utf-8")
    index = [a for flag in PIP_INDEX for v in getattr(args, flag[2:].replace("-", "_")) for a in (flag, v)]
    listed = [] if args.requirements is None else args.requirements.read_text(encoding="utf-8").splitlines()
    listed = [line.split("#", 1)[0].strip() for line in listed]
    args.exclude += [line.split(None, 1)[1] for line in listed if line.startswith("--exclude ")]
    requires = [*(x for x in listed if x and not x.startswith("--")), *args.require] or list(DEFAULT_REQUIRE)
    exclude = {canonicalize_name(e) for e in [*args.exclude, *(() if args.no_default_excludes else DEFAULT_EXCLUDE)]}
    pip = Pip(args.out, index + ["--no-index"] * args.no_index)
    nodes = Resolver(parse_present(text), exclude, pip).resolve(requires)
    resolution = {"requirements": requires, "exclude": sorted(exclude), **report(nodes, args.out)}
    resolution["present_list"] = {"file": args.present.name, "sha256": hashlib.sha256(text.encode()).hexdigest()}
    (args.out / RESOLUTION).write_text(json.dumps(resolution, indent=2) + "\n", encoding="utf-8")
    if resolution["unresolvable"]:
        print("not packed: some requirements have no wheel for the target (above)", file=sys.stderr)
        return 1
    return 0 if args.no_pack else pack(args.out, int(args.part_mib * MIB), args.lzma)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.gpu_wheels", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("download", help="resolve and download what the GPU machine lacks, then pack")
    d.add_argument("--present", type=Path, default=DEFAULT_PRESENT, help="the target's `pip list` (any format)")
    d.add_argument("--require", action="append", default=[], help=f"default: {' '.join(DEFAULT_REQUIRE)}")
    d.add_argument(
        "--requirements",
        type=Path,
        help="a file of requirements, one a line (# comments), e.g. bench/gpu_requirements.txt",
    )
    d.add_argument("--exclude", action="append", default=[], help="never send this package (nor follow it)")
    d.add_argument(
        "--no-default-excludes", action="store_true", help=f"also send {', '.join(DEFAULT_EXCLUDE)} (vLLM never uses)"
    )
    d.add_argument("--out", type=Path, required=True)
    for flag in PIP_INDEX:
        d.add_argument(flag, action="append", default=[], help="passed to pip")
    d.add_argument("--no-index", action="store_true", help="passed to pip")
    d.add_argument("--no-pack", action="store_true")
    pk = sub.add_parser("pack", help="cut DIR's resolved wheels into parts")
    pk.add_argument("dir", type=Path)
    for p in (d, pk):
        p.add_argument("--part-mib", type=float, default=55.0, help="part size in MiB (fractions for tests)")
        p.add_argument(
            "--lzma", type=int, default=6, choices=range(10), help="xz preset; 0: send the wheels as they are"
        )
    v = sub.add_parser("verify", help="which parts are there, missing or damaged")
    i = sub.add_parser("install", help="check, reassemble and pip install the parts into --target")
    for p in (v, i):
        p.add_argument("--parts", type=Path, default=Path(GPU_PARTS))
    i.add_argument("--target", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "pack":
        return pack(args.dir, int(args.part_mib * MIB), args.lzma)
    return {"download": download, "verify": verify, "install": install}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
