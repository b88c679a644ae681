"""Static checks of the deployment files: docker-compose.yml, deploy/Dockerfile.*, deploy/.env.example.

Docker is not needed: the files are parsed (PyYAML, a small Dockerfile reader) and checked against each other
and against the code they deploy (api/core/settings.py's fields, pyproject's torch pin, the uvicorn/celery commands).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from api.core.settings import ApiSettings
from worker.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE_API = ROOT / "deploy" / "Dockerfile.api"
DOCKERFILE_WORKER = ROOT / "deploy" / "Dockerfile.worker"

REQUIRED_SERVICES = {"postgres", "redis", "minio", "minio-init", "migrate", "api", "worker", "worker-cpu"}
LONG_RUNNING = {"postgres", "redis", "minio", "api", "worker", "worker-cpu"}
ONE_SHOT = {"minio-init", "migrate"}
WORKERS = ("worker", "worker-cpu")
SANDBOXED = ("api", *WORKERS)  # run python graders in bubblewrap
# Settings a compose deployment must set (the defaults are SQLite, a filesystem broker, a local folder, localhost).
REQUIRED_ENV = {
    "DATABASE_URL",
    "BROKER_URL",
    "S3_ENDPOINT_URL",
    "S3_BUCKET",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "WORKER_TOKEN",
    "API_URL",
    "MODEL_CATALOG_DIR",
}
# Variables of the env file read by containers other than ours (the postgres and minio images), or by a command
# line (the model id of the inference service).
NON_SETTINGS_ENV = {
    "POSTGRES_USER",
    "POSTGRES_PASSWORD",
    "POSTGRES_DB",
    "MINIO_ROOT_USER",
    "MINIO_ROOT_PASSWORD",
    "INFERENCE_MODEL",
}
# What a worker must not hold (it reaches the database only through the API).
DB_CREDENTIALS = ("DATABASE_URL", "POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB")
ROOT_USERS = {"root", "0"}


# ---------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict) and isinstance(data.get("services"), dict), "no services in docker-compose.yml"
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return compose["services"]


def env_files(service: dict[str, Any]) -> list[tuple[Path, bool]]:
    """(path, required) of a service's env_file entries, in compose's string / list / long syntax."""
    raw = service.get("env_file", [])
    entries = [raw] if isinstance(raw, str) else raw
    out = []
    for entry in entries:
        if isinstance(entry, str):
            out.append((ROOT / entry, True))
        else:
            out.append((ROOT / entry["path"], entry.get("required", True)))
    return out


def parse_env_file(path: Path) -> dict[str, str]:
    """KEY=VALUE lines; comments and blank lines skipped (the subset of compose's format the example uses)."""
    env: dict[str, str] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        assert m, f"{path.name}:{n}: not KEY=VALUE: {line!r}"
        assert m.group(1) not in env, f"{path.name}:{n}: {m.group(1)} set twice"
        env[m.group(1)] = m.group(2)
    return env


@pytest.fixture(scope="module")
def env_example(services: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The required env file the API uses (the committed example)."""
    required = [path for path, req in env_files(services["api"]) if req]
    assert len(required) == 1, f"api should read exactly one required env file, got {required}"
    assert required[0].is_file(), f"{required[0]} does not exist"
    return parse_env_file(required[0])


def service_env(service: dict[str, Any], env_example: dict[str, str]) -> dict[str, str]:
    """What the container sees from the example: env_file first, then `environment` overrides."""
    env = dict(env_example) if env_files(service) else {}
    extra = service.get("environment", {})
    if isinstance(extra, list):
        extra = dict(item.split("=", 1) if "=" in item else (item, "") for item in extra)
    env.update({k: "" if v is None else str(v) for k, v in extra.items()})
    return env


def image_is_pinned(ref: str) -> bool:
    """A digest, or a tag that is not `latest` (a registry port is not a tag: registry:5000/name)."""
    if "@sha256:" in ref:
        return True
    last = ref.rsplit("/", 1)[-1]
    if ":" not in last:
        return False
    tag = last.split(":", 1)[1]
    return bool(tag) and tag != "latest" and "$" not in tag


def dockerfile(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and not buf):
            continue
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        full = (buf + stripped).strip()
        buf = ""
        if full:
            keyword, _, args = full.partition(" ")
            out.append((keyword.upper(), args.strip()))
    assert not buf, f"{path.name}: dangling line continuation"
    return out


def arg_defaults(instructions: list[tuple[str, str]]) -> dict[str, str]:
    defaults = {}
    for keyword, args in instructions:
        if keyword == "ARG" and "=" in args:
            name, value = args.split("=", 1)
            defaults[name.strip()] = value.strip().strip('"')
    return defaults


def substitute(text: str, values: dict[str, str]) -> str:
    return re.sub(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", lambda m: values.get(m.group(1), m.group(0)), text)


def exec_form(args: str) -> list[str]:
    """CMD/ENTRYPOINT arguments as a list (JSON exec form or shell form)."""
    return yaml.safe_load(args) if args.startswith("[") else shlex.split(args)


def option(argv: list[str], *names: str) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def pyproject_extra_requirements(extra: str) -> list[str]:
    """Requirements of an extra, with the project's self-references (rft-service[a,b]) expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    seen: set[str] = set()
    out = list(project["dependencies"])

    def walk(name: str) -> None:
        if name in seen:
            return
        seen.add(name)
        for req in extras[name]:
            m = re.fullmatch(r"rft-service\[([^\]]+)\]", req.replace(" ", ""))
            if m:
                for sub in m.group(1).split(","):
                    walk(sub)
            else:
                out.append(req)

    walk(extra)
    return out


# ---------------------------------------------------------------- compose: services, images, health


def test_required_services_exist(services: dict[str, dict[str, Any]]) -> None:
    assert services.keys() >= REQUIRED_SERVICES, f"missing: {REQUIRED_SERVICES - services.keys()}"


def test_every_build_context_and_dockerfile_exists(services: dict[str, dict[str, Any]]) -> None:
    built = {name: svc["build"] for name, svc in services.items() if "build" in svc}
    assert {"migrate", "api", "worker", "worker-cpu"} <= built.keys()
    for name, build in built.items():
        build = {"context": build} if isinstance(build, str) else build
        context = ROOT / build.get("context", ".")
        assert context.is_dir(), f"{name}: build context {context} missing"
        dockerfile_path = context / build.get("dockerfile", "Dockerfile")
        assert dockerfile_path.is_file(), f"{name}: {dockerfile_path} missing"


def test_every_image_is_pinned(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in services.items():
        if "image" in svc:
            assert image_is_pinned(svc["image"]), f"{name}: image {svc['image']!r} has no tag or uses latest"
        else:
            assert "build" in svc, f"{name}: neither image nor build"
        args = svc.get("build", {}).get("args", {}) if isinstance(svc.get("build"), dict) else {}
        if "BASE_IMAGE" in args:
            assert image_is_pinned(args["BASE_IMAGE"]), f"{name}: BASE_IMAGE {args['BASE_IMAGE']!r} not pinned"


def test_minio_init_uses_pinned_mc_after_minio_is_healthy(services: dict[str, dict[str, Any]]) -> None:
    init = services["minio-init"]
    assert init["image"].startswith("minio/mc:")
    assert init["depends_on"]["minio"]["condition"] == "service_healthy"
    script = " ".join(init.get("entrypoint", [])) + " " + " ".join(init.get("command", []))
    assert "mc mb" in script and "--ignore-existing" in script and "S3_BUCKET" in script


def test_migrate_runs_alembic_with_the_api_image(services: dict[str, dict[str, Any]]) -> None:
    migrate, api = services["migrate"], services["api"]
    assert migrate["command"] == ["alembic", "upgrade", "head"]
    assert migrate["build"] == api["build"] and migrate.get("image") == api.get("image")
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "restart" not in migrate or migrate["restart"] == "no"  # a one-shot must not loop


def test_long_running_services_have_healthchecks_and_restart(services: dict[str, dict[str, Any]]) -> None:
    for name in LONG_RUNNING:
        check = services[name].get("healthcheck")
        assert check and not check.get("disable") and check.get("test"), f"{name}: no healthcheck"
        assert services[name].get("restart") == "unless-stopped", f"{name}: restart policy"
    for name in ONE_SHOT:
        assert services[name].get("restart", "no") == "no", f"{name}: one-shot with a restart policy"


def test_api_dependencies(services: dict[str, dict[str, Any]]) -> None:
    deps = services["api"]["depends_on"]
    assert deps["migrate"]["condition"] == "service_completed_successfully"
    assert deps["minio-init"]["condition"] == "service_completed_successfully"
    for name in ("postgres", "redis", "minio"):
        assert deps[name]["condition"] == "service_healthy", name


def test_depends_on_targets_are_consistent(services: dict[str, dict[str, Any]]) -> None:
    """Targets exist, are always enabled (no profile), and have what the condition waits for."""
    for name, svc in services.items():
        deps = svc.get("depends_on", {})
        deps = {key: {"condition": "service_started"} for key in deps} if isinstance(deps, list) else deps
        for target, spec in deps.items():
            assert target in services, f"{name} depends on unknown {target}"
            assert not services[target].get("profiles"), f"{name} depends on profiled {target}"
            condition = spec["condition"]
            if condition == "service_healthy":
                assert target in LONG_RUNNING and services[target].get("healthcheck"), f"{name} -> {target}"
            elif condition == "service_completed_successfully":
                assert target in ONE_SHOT, f"{name} waits for long-running {target} to exit"


def test_api_healthcheck_and_ports_match_uvicorn(services: dict[str, dict[str, Any]], env_example) -> None:
    api = services["api"]
    port = option(api["command"], "--port")
    assert port is not None, "api command has no --port"
    image_cmd = next(exec_form(a) for k, a in reversed(dockerfile(DOCKERFILE_API)) if k == "CMD")
    assert option(image_cmd, "--port") == port, "Dockerfile.api CMD and compose disagree on the port"
    exposed = [a for k, a in dockerfile(DOCKERFILE_API) if k == "EXPOSE"]
    assert exposed == [port]
    published = [str(p).rsplit(":", 1)[-1] for p in api["ports"]]
    assert port in published, f"api publishes {api['ports']}, uvicorn listens on {port}"
    test = " ".join(api["healthcheck"]["test"])
    assert f"127.0.0.1:{port}/readyz" in test and "python" in test
    assert urlsplit(env_example["API_URL"]).port == int(port)


def test_gpu_worker(services: dict[str, dict[str, Any]]) -> None:
    worker = services["worker"]
    assert worker["profiles"] == ["gpu"]
    devices = worker["deploy"]["resources"]["reservations"]["devices"]
    assert len(devices) == 1
    assert devices[0]["driver"] == "nvidia" and devices[0]["count"] == 1 and "gpu" in devices[0]["capabilities"]


def test_cpu_worker(services: dict[str, dict[str, Any]]) -> None:
    worker = services["worker-cpu"]
    assert worker["profiles"] == ["cpu"]
    assert not worker.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices")
    assert worker["build"]["args"]["TORCH_INDEX"].endswith("/cpu")


def compose_seconds(duration: str) -> float:
    """Compose's duration syntax (``1m30s``, ``10m``, ``90s``) in seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?", duration)
    assert parts and duration, f"not a compose duration: {duration!r}"
    h, m, sec = (int(x or 0) for x in parts.groups())
    return 3600 * h + 60 * m + sec


@pytest.mark.parametrize("name", WORKERS)
def test_worker_stop_grace_covers_a_step_and_its_checkpoint(services: dict[str, dict[str, Any]], name: str) -> None:
    """On SIGTERM the job stops at the next step boundary and checkpoints: Docker's default 10 s would SIGKILL it
    first (and lose the step and an attempt). At least the bound the worker itself gives a step to end."""
    grace = compose_seconds(services[name].get("stop_grace_period", "10s"))
    assert grace >= WorkerSettings.model_fields["stop_grace_seconds"].default, grace
    assert compose_seconds("1m30s") == 90 and compose_seconds("10m") == 600


@pytest.mark.parametrize("name", WORKERS)
def test_worker_command_is_one_job_on_the_gpu_queue(services: dict[str, dict[str, Any]], name: str) -> None:
    argv = services[name]["command"]
    assert argv[:4] == ["celery", "-A", "worker.celery_app", "worker"]
    assert option(argv, "-Q", "--queues") == "gpu"
    assert option(argv, "-c", "--concurrency") == "1"
    assert option(argv, "-P", "--pool") in (None, "prefork")
    assert "inspect ping" in " ".join(services[name]["healthcheck"]["test"])


@pytest.mark.parametrize("name", WORKERS)
def test_workers_hold_no_database_credentials(services, env_example, name: str) -> None:
    env = service_env(services[name], env_example)
    for var in DB_CREDENTIALS:
        assert not env.get(var), f"{name} receives {var}"
    for var in REQUIRED_ENV - {"DATABASE_URL"}:
        assert env.get(var), f"{name} lacks {var}"


def test_named_volumes_declared_and_mounted(compose: dict[str, Any], env_example: dict[str, str]) -> None:
    declared = set(compose.get("volumes") or {})
    assert {"pgdata", "miniodata", "models", "work"} <= declared
    mounts: dict[str, dict[str, str]] = {}
    for name, svc in compose["services"].items():
        for vol in svc.get("volumes", []):
            source, target = vol.split(":")[:2]
            if not source.startswith((".", "/")):
                assert source in declared, f"{name}: volume {source} not declared"
            mounts.setdefault(name, {})[target] = source
    models, work = env_example["MODEL_CATALOG_DIR"], env_example["WORK_DIR"]
    for name in WORKERS:
        assert mounts[name].get(models) == "models" and mounts[name].get(work) == "work", name
    assert mounts["api"].get(models) == "models", "the API lists the catalog: it needs the models volume"
    assert mounts["postgres"].get("/var/lib/postgresql/data") == "pgdata"
    assert mounts["minio"].get("/data") == "miniodata"


@pytest.mark.parametrize("name", SANDBOXED)
def test_sandbox_security_options(services: dict[str, dict[str, Any]], name: str) -> None:
    svc = services[name]
    opts = svc.get("security_opt", [])
    assert not svc.get("privileged"), f"{name}: privileged is not needed by bubblewrap"
    assert "systempaths=unconfined" in opts, f"{name}: bwrap cannot mount its /proc under masked paths"
    assert any(o.startswith("seccomp") for o in opts) and any(o.startswith("apparmor") for o in opts)
    assert any(o.replace("=", ":") == "no-new-privileges:true" for o in opts)
    for opt in opts:
        if opt.startswith("seccomp") and not opt.endswith("unconfined"):
            assert (ROOT / re.split("[=:]", opt, maxsplit=1)[1]).is_file(), opt


def test_only_sandboxed_services_loosen_security(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in services.items():
        if name not in SANDBOXED:
            assert not any("unconfined" in o for o in svc.get("security_opt", [])), name
            assert not svc.get("privileged"), name


# ---------------------------------------------------------------- the env file


# The env file is shared by the API and the workers: each name is read by one of them.
SETTINGS_FIELDS = {name.upper() for name in ApiSettings.model_fields | WorkerSettings.model_fields}


def test_env_file_provides_what_a_deployment_needs(env_example: dict[str, str]) -> None:
    fields = SETTINGS_FIELDS
    assert fields >= REQUIRED_ENV, f"not settings fields any more: {REQUIRED_ENV - fields}"
    missing = {var for var in REQUIRED_ENV if not env_example.get(var)}
    assert not missing, f"env file lacks {missing}"


def test_env_file_names_are_settings_fields(env_example: dict[str, str]) -> None:
    fields = SETTINGS_FIELDS
    unknown = set(env_example) - fields - NON_SETTINGS_ENV
    assert not unknown, f"not settings fields (typos?): {unknown}"


def test_env_file_values_are_valid_settings(env_example: dict[str, str]) -> None:
    for cls in (ApiSettings, WorkerSettings):
        values = {k.lower(): v for k, v in env_example.items() if k.lower() in cls.model_fields}
        settings = cls(_env_file=None, **values)  # type: ignore[call-arg]
        assert settings.internal_token  # WORKER_TOKEN is mandatory once DATABASE_URL / BROKER_URL are set
        assert settings.reward_sandbox in ("auto", "bwrap")  # a shared deployment needs the strong tier


def test_every_service_env_file_exists_when_required(services: dict[str, dict[str, Any]]) -> None:
    for name, svc in services.items():
        for path, required in env_files(svc):
            if required:
                assert path.is_file(), f"{name}: env file {path} missing"
            else:
                assert path.name != ".env.example", f"{name}: the example must be required"


def test_env_hosts_are_compose_services(services: dict[str, dict[str, Any]], env_example) -> None:
    expected = {
        "DATABASE_URL": ("postgres", 5432),
        "BROKER_URL": ("redis", 6379),
        "S3_ENDPOINT_URL": ("minio", 9000),
        "API_URL": ("api", None),
    }
    for var, (host, port) in expected.items():
        url = urlsplit(env_example[var])
        assert url.hostname == host and host in services, f"{var} points at {url.hostname}, not {host}"
        if port is not None:
            assert url.port in (None, port), f"{var}: port {url.port}"


def test_env_credentials_match_the_backing_services(env_example: dict[str, str]) -> None:
    db = urlsplit(env_example["DATABASE_URL"])
    assert db.username == env_example["POSTGRES_USER"]
    assert db.password == env_example["POSTGRES_PASSWORD"]
    assert db.path.lstrip("/") == env_example["POSTGRES_DB"]
    assert env_example["AWS_ACCESS_KEY_ID"] == env_example["MINIO_ROOT_USER"]
    assert env_example["AWS_SECRET_ACCESS_KEY"] == env_example["MINIO_ROOT_PASSWORD"]


def test_public_s3_endpoint_is_published(services: dict[str, dict[str, Any]], env_example) -> None:
    public = env_example.get("S3_PUBLIC_ENDPOINT_URL")
    if public:
        port = str(urlsplit(public).port or 80)
        published = [str(p).split(":")[-2] for p in services["minio"].get("ports", [])]
        assert port in published, f"presigned URLs use port {port}; minio publishes {published}"


# ---------------------------------------------------------------- Dockerfiles


@pytest.mark.parametrize("path", [DOCKERFILE_API, DOCKERFILE_WORKER], ids=lambda p: p.name)
def test_dockerfile_runs_as_non_root_after_last_run(path: Path) -> None:
    instructions = dockerfile(path)
    keywords = [k for k, _ in instructions]
    assert "RUN" in keywords
    last_run = max(i for i, k in enumerate(keywords) if k == "RUN")
    users = [(i, a) for i, (k, a) in enumerate(instructions) if k == "USER"]
    assert users, f"{path.name}: no USER"
    i, user = users[-1]
    assert i > last_run, f"{path.name}: a RUN after the last USER runs as that user, or USER is before RUN"
    assert user.split(":")[0] not in ROOT_USERS, f"{path.name}: USER {user}"


@pytest.mark.parametrize("path", [DOCKERFILE_API, DOCKERFILE_WORKER], ids=lambda p: p.name)
def test_dockerfile_bases_are_pinned(path: Path) -> None:
    instructions = dockerfile(path)
    defaults = arg_defaults(instructions[: [k for k, _ in instructions].index("FROM")])
    froms = [a.split()[0] for k, a in instructions if k == "FROM" and not a.startswith("--")]
    assert froms
    for ref in froms:
        resolved = substitute(ref, defaults)
        assert image_is_pinned(resolved), f"{path.name}: FROM {ref} -> {resolved}"


@pytest.mark.parametrize("path", [DOCKERFILE_API, DOCKERFILE_WORKER], ids=lambda p: p.name)
def test_dockerfile_bases_are_build_arguments(path: Path) -> None:
    """Every stage's base is a build argument (default: the upstream image), so `make images` can build on a local
    base where no registry is reachable (scripts/images.sh)."""
    instructions = dockerfile(path)
    defaults = arg_defaults(instructions[: [k for k, _ in instructions].index("FROM")])
    for keyword, args in instructions:
        if keyword == "FROM":
            ref = args.split()[0]
            assert re.fullmatch(r"\$\{\w+\}", ref) and ref[2:-1] in defaults, f"{path.name}: FROM {ref}"


@pytest.mark.parametrize("path", [DOCKERFILE_API, DOCKERFILE_WORKER], ids=lambda p: p.name)
def test_dockerfile_copy_sources_exist(path: Path) -> None:
    for keyword, args in dockerfile(path):
        if keyword in ("COPY", "ADD") and "--from" not in args:
            *sources, _ = [a for a in args.split() if not a.startswith("--")]
            for src in sources:
                assert (ROOT / src).exists(), f"{path.name}: {keyword} {src}: not in the build context"


@pytest.mark.parametrize("path", [DOCKERFILE_API, DOCKERFILE_WORKER], ids=lambda p: p.name)
def test_dockerfile_builds_the_grader_sandbox(path: Path) -> None:
    runs = " ".join(a for k, a in dockerfile(path) if k == "RUN")
    assert "bubblewrap" in runs, f"{path.name}: python graders need bwrap"
    copied = " ".join(a for k, a in dockerfile(path) if k == "COPY")
    assert "scripts/sandbox_setup.sh" in copied, f"{path.name}: the sandbox env should follow sandbox_setup.sh"


@pytest.mark.parametrize(
    ("path", "packages", "absent"),
    [
        (DOCKERFILE_API, {"api", "runtime", "grpo_core", "migrations"}, "worker"),
        (DOCKERFILE_WORKER, {"worker", "runtime", "grpo_core"}, "api"),
    ],
    ids=["api", "worker"],
)
def test_each_image_holds_its_own_code_and_the_shared_runtime(path: Path, packages: set[str], absent: str) -> None:
    """The worker never imports api (tests/unit/test_layering.py), so its image does not carry it, nor the API's
    the worker."""
    copied = {
        args.split()[0].rstrip("/") for keyword, args in dockerfile(path) if keyword == "COPY" and "--from" not in args
    }
    assert packages <= copied, f"{path.name} lacks {packages - copied}"
    assert absent not in copied, f"{path.name} copies {absent}/"


def test_api_image_never_installs_torch() -> None:
    for keyword, args in dockerfile(DOCKERFILE_API):
        if keyword == "RUN":
            assert not re.search(r"\btorch\b|\[(?:[^\]]*,)?\s*(?:worker|train|dev)\b", args), args
    requirements = pyproject_extra_requirements("api")
    assert not [r for r in requirements if re.match(r"(torch|vllm|transformers)\b", r)], requirements


def test_worker_image_pins_torch_like_pyproject() -> None:
    pins = [r for r in pyproject_extra_requirements("worker") if re.match(r"torch\b", r)]
    assert pins == ["torch==2.13.0"], pins
    instructions = dockerfile(DOCKERFILE_WORKER)
    runs = " ".join(a for k, a in instructions if k == "RUN")
    torch_installs = re.findall(r"pip install[^&;]*?\btorch(\S*)", runs)
    assert torch_installs and all(spec == "==2.13.0" for spec in torch_installs), torch_installs
    assert "'.[worker]'" in runs or '".[worker]"' in runs
    assert arg_defaults(instructions).get("TORCH_INDEX") == "https://download.pytorch.org/whl/cu128"
    base = arg_defaults(instructions).get("BASE_IMAGE", "")
    assert base.startswith("nvidia/cuda:12.8"), base


def test_worker_image_cmd_matches_compose(services: dict[str, dict[str, Any]]) -> None:
    cmd = next(exec_form(a) for k, a in reversed(dockerfile(DOCKERFILE_WORKER)) if k == "CMD")
    assert cmd == services["worker"]["command"]


def test_api_image_builds_the_dashboard_from_its_lockfile() -> None:
    """The API image serves the dashboard: a Node stage bundles it with `npm ci` (the lockfile's versions) and
    only dist/ reaches the final image, where api/core/web.py looks for it."""
    instructions = dockerfile(DOCKERFILE_API)
    stages = [(i, a.split()) for i, (k, a) in enumerate(instructions) if k == "FROM"]
    assert len(stages) == 2, "a Node build stage, then the runtime stage"
    (first, node_from), (second, _) = stages
    defaults = arg_defaults(instructions[:first])
    assert substitute(node_from[0], defaults).startswith("node:") and node_from[-2].upper() == "AS", node_from
    name = node_from[-1]
    build = instructions[first:second]
    runs = " ".join(a for k, a in build if k == "RUN")
    assert "npm ci" in runs and "node build.mjs" in runs, runs
    copied = " ".join(a for k, a in build if k == "COPY")
    assert "api/dashboard/package-lock.json" in copied and "api/dashboard/src" in copied
    final_copies = [a for k, a in instructions[second:] if k == "COPY" and a.startswith(f"--from={name} ")]
    assert final_copies == [f"--from={name} /src/dist ./api/dashboard/dist"], final_copies
    from api.core import web

    # where the image puts it: WORKDIR /app holds the repo's layout, and uvicorn imports api/ from there
    assert web.DIST == ROOT / "api" / "dashboard" / "dist"
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"api/dashboard/node_modules", "api/dashboard/dist"} <= set(ignored)  # no local build leaks in
