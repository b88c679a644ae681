"""Static checks of the Kubernetes manifests (deploy/k8s), so that a typo there fails here rather than in a cluster.

Core kinds are validated, offline, against the Kubernetes JSON schemas that kubernetes-validate ships (strict:
unknown fields are errors); the KEDA and Prometheus Operator objects (CRDs) get structural checks of their own. The
manifests are then checked against each other and against the code they deploy: each process's settings fields, the
Celery queue name, the probe routes of the app, the uvicorn/celery commands and images of docker-compose.yml, the
Dockerfiles' uid, and the inference fleet's shape (a headless Service per model Deployment, named by the api's
INFERENCE_ENDPOINTS; autoscalers on vLLM's metrics; the ports a worker serves on demand).
"""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import kubernetes_validate
import pytest
import yaml
from fastapi.testclient import TestClient

from api.core.settings import ApiSettings
from api.db.models import JobStatus
from api.main import create_app
from runtime.queue import GPU_QUEUE
from runtime.settings import CommonSettings
from tests.helpers import migrate
from tests.unit.test_deploy_files import option  # the same reading of -Q / --port as the compose checks
from worker.settings import WorkerSettings

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
K8S_VERSION = "1.33"  # user namespaces (hostUsers: false) are on by default from 1.33
NAMESPACE = "rft"
CRDS = {
    ("keda.sh/v1alpha1", "ScaledObject"),
    ("keda.sh/v1alpha1", "TriggerAuthentication"),
    ("monitoring.coreos.com/v1", "PodMonitor"),
}
KUSTOMIZATION = ("kustomize.config.k8s.io/v1beta1", "Kustomization")
SANDBOXED = ("api", "worker")  # Deployments whose pods run python graders in bubblewrap
SANDBOX_UID = 10001  # the numeric USER of both Dockerfiles
DB_ENV = {"DATABASE_URL", "POSTGRES_USER", "POSTGRES_PASSWORD", "POSTGRES_DB"}
WORKER_NEEDS = {"BROKER_URL", "API_URL", "WORKER_TOKEN", "S3_BUCKET", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}
SECRET_LIKE = re.compile(r"(PASSWORD|SECRET|TOKEN|_KEY$|_KEY_ID$|DATABASE_URL|BROKER_URL)")
ENV_FROM = (("configMapRef", "ConfigMap", "configMapKeyRef"), ("secretRef", "Secret", "secretKeyRef"))
Doc = dict[str, Any]


# Read at import: the schema test is parametrised over the documents.
DOCS = [
    (path, doc)
    for path in sorted([*K8S.rglob("*.yaml"), *K8S.rglob("*.yml")])
    for doc in yaml.safe_load_all(path.read_text())
    if doc is not None
]
RESOURCES = [(p, d) for p, d in DOCS if (d.get("apiVersion"), d.get("kind")) != KUSTOMIZATION]
CORE = [(p, d) for p, d in RESOURCES if (d.get("apiVersion"), d.get("kind")) not in CRDS]


def doc_id(item: tuple[Path, Doc]) -> str:
    return f"{item[0].relative_to(K8S)}:{item[1].get('kind')}/{item[1].get('metadata', {}).get('name')}"


def find(kind: str, name: str) -> Doc:
    found = [d for _, d in RESOURCES if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} documents"
    return found[0]


def pod_spec(workload: Doc) -> Doc:
    return workload["spec"]["template"]["spec"]


def only_container(workload: Doc) -> Doc:
    containers = pod_spec(workload)["containers"]
    assert len(containers) == 1, f"{workload['metadata']['name']}: expected one container"
    return containers[0]


def workloads() -> list[Doc]:
    return [d for _, d in RESOURCES if d["kind"] in ("Deployment", "Job", "StatefulSet", "DaemonSet")]


def component(doc: Doc) -> str:
    """What a workload is (api, migrate, worker, inference): one inference Deployment per model shares it."""
    return str(doc["metadata"]["labels"]["app.kubernetes.io/component"])


def inference_deployments(*, base_only: bool = False) -> list[Doc]:
    """The per-model inference Deployments: those of the kustomization, or with the examples' too."""
    return [
        d
        for p, d in RESOURCES
        if d["kind"] == "Deployment" and component(d) == "inference" and (p.parent == K8S or not base_only)
    ]


def served_model(deployment: Doc) -> str:
    """The base model an inference Deployment serves: the argument after ``worker.inference_server``."""
    command = only_container(deployment)["command"]
    return str(command[command.index("worker.inference_server") + 1])


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def service_hosts(name: str) -> set[str]:
    """The names a Service of the namespace is reached by from a pod of the namespace."""
    return {name, f"{name}.{NAMESPACE}", f"{name}.{NAMESPACE}.svc", f"{name}.{NAMESPACE}.svc.cluster.local"}


def port_number(container: Doc, port: int | str) -> int:
    """A container port given by number or by name."""
    named = {p.get("name"): p["containerPort"] for p in container.get("ports", [])}
    return int(named[port]) if isinstance(port, str) else int(port)


def walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every mapping in a document, depth first."""
    if isinstance(node, dict):
        yield node
    for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else []:
        yield from walk(child)


def data(kind: str, name: str) -> dict[str, str]:
    """A ConfigMap's or Secret's keys and values (data and stringData)."""
    doc = find(kind, name)
    return {**(doc.get("data") or {}), **(doc.get("stringData") or {})}


def data_keys(kind: str, name: str) -> set[str]:
    return set(data(kind, name))


def container_env(container: Doc) -> dict[str, Doc]:
    """Variable name -> its source ({"value": ...} or {"configMapKeyRef"/"secretKeyRef": ...}), envFrom expanded."""
    env: dict[str, Doc] = {}
    for source in container.get("envFrom", []):
        prefix = source.get("prefix", "")
        for ref_kind, kind, ref in ENV_FROM:
            if ref_kind in source:
                name = source[ref_kind]["name"]
                env |= {prefix + key: {ref: {"name": name, "key": key}} for key in data_keys(kind, name)}
    for var in container.get("env", []):
        env[var["name"]] = var.get("valueFrom") or {"value": var.get("value", "")}
    return env


def resolve(source: Doc) -> str:
    """The value a variable gets from the committed manifests."""
    if "value" in source:
        return source["value"]
    for ref, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
        if ref in source:
            return data(kind, source[ref]["name"])[source[ref]["key"]]
    raise AssertionError(f"cannot resolve {source}")


def effective(pod: Doc, container: Doc, field: str) -> Any:
    """A security field as the kubelet applies it: the container's value, else the pod's."""
    return container.get("securityContext", {}).get(field, pod.get("securityContext", {}).get(field))


def settings_env_names(cls: type[CommonSettings]) -> set[str]:
    """Environment names pydantic-settings reads: field names (or string aliases), case-blind, no prefix."""
    assert cls.model_config.get("env_prefix", "") == "" and not cls.model_config.get("case_sensitive")
    fields = cls.model_fields.items()
    return {((f.validation_alias if isinstance(f.validation_alias, str) else f.alias) or n).upper() for n, f in fields}


# Which process reads a workload's environment, by component (the migration Job runs alembic with the API's settings).
PROCESS_SETTINGS: dict[str, type[CommonSettings]] = {"worker": WorkerSettings, "inference": CommonSettings}
ANY_PROCESS = settings_env_names(ApiSettings) | settings_env_names(WorkerSettings)


@pytest.fixture(scope="module")
def compose() -> dict[str, Doc]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


@pytest.fixture(scope="module")
def app_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """The real app on a migrated SQLite schema (no reaper/dispatcher threads): the probes hit its routes."""
    state = tmp_path_factory.mktemp("k8s-app")
    settings = ApiSettings(  # type: ignore[call-arg]
        _env_file=None, state_dir=state, worker_token="t0k", reaper=False, webhook_dispatcher=False, log_format="text"
    )
    migrate(settings.db_url)
    with TestClient(create_app(settings)) as client:
        yield client


def test_every_document_is_identified_and_in_the_namespace() -> None:
    assert RESOURCES, "no manifests under deploy/k8s"
    seen = set()
    for path, doc in RESOURCES:
        assert doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"), path
        if doc["kind"] != "Namespace":
            assert doc["metadata"].get("namespace") == NAMESPACE, doc_id((path, doc))
        key = (doc["kind"], doc["metadata"]["name"])
        assert key not in seen, f"{key} defined twice"
        seen.add(key)
    assert find("Namespace", NAMESPACE)


@pytest.mark.parametrize("item", CORE, ids=doc_id)
def test_core_documents_validate_strictly(item: tuple[Path, Doc]) -> None:
    try:
        version = kubernetes_validate.validate(item[1], K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{doc_id(item)}: {'.'.join(map(str, exc.path))}: {exc.message}")
    except kubernetes_validate.SchemaNotFoundError as exc:
        pytest.fail(f"{doc_id(item)}: {exc.message} (a CRD must be added to CRDS and checked by hand)")
    assert version == K8S_VERSION, f"validated against {version}, not {K8S_VERSION}"


def test_validator_is_strict_and_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unknown nested fields are rejected, and validation opens no connection (the schemas are in the package)."""

    def no_network(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("kubernetes-validate tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    job = yaml.safe_load((K8S / "migrate-job.yaml").read_text())
    assert kubernetes_validate.validate(job, K8S_VERSION, strict=True) == K8S_VERSION
    only_container(job)["securityContext"]["runAsUserr"] = 1
    with pytest.raises(kubernetes_validate.ValidationError, match="runAsUserr"):
        kubernetes_validate.validate(job, K8S_VERSION, strict=True)


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert (kustomization["apiVersion"], kustomization["kind"]) == KUSTOMIZATION
    assert kustomization.get("namespace") == NAMESPACE
    listed = kustomization["resources"]
    assert len(listed) == len(set(listed)), "a resource listed twice"
    on_disk = {p.name for p in K8S.glob("*.y*ml") if p.name != "kustomization.yaml"}
    assert set(listed) == on_disk, f"missing {on_disk - set(listed)}, unknown {set(listed) - on_disk}"
    kinds = {d["kind"] for p, d in RESOURCES if p.parent == K8S}
    assert not {kind for _, kind in CRDS} & kinds, "CRD objects belong in examples/: core clusters lack the CRD"


def test_containers_take_settings_fields_and_bounded_memory() -> None:
    """What a container sets itself is read by its own process; the shared ConfigMap by one process or the other."""
    shared = set(find("ConfigMap", "rft-config")["data"])
    assert shared <= ANY_PROCESS, f"not a settings field of any process: {shared - ANY_PROCESS}"
    for workload in workloads():
        name = workload["metadata"]["name"]
        fields = settings_env_names(PROCESS_SETTINGS.get(component(workload), ApiSettings))
        for container in pod_spec(workload)["containers"]:
            unknown = {var["name"] for var in container.get("env", [])} - fields
            assert not unknown, f"{name}: not settings fields of its process (typos?): {unknown}"
            resources = container.get("resources", {})
            assert resources.get("requests", {}).get("memory"), f"{container['name']}: no memory request"
            assert resources.get("limits", {}).get("memory"), f"{container['name']}: no memory limit"


def test_secrets_hold_placeholders_and_config_holds_no_secret() -> None:
    for _, doc in RESOURCES:
        if doc["kind"] == "Secret":
            assert not doc.get("data"), f"{doc['metadata']['name']}: base64 data; commit placeholders only"
            for key, value in doc["stringData"].items():
                assert "CHANGE-ME" in value, f"Secret {doc['metadata']['name']}/{key} is not a placeholder"
    config = find("ConfigMap", "rft-config")["data"]
    assert not [k for k in config if SECRET_LIKE.search(k)], "secret-looking keys in the ConfigMap"
    for workload in workloads():
        for container in pod_spec(workload)["containers"]:
            for name, source in container_env(container).items():
                assert not (SECRET_LIKE.search(name) and "value" in source), f"{name} given as a literal value"


def test_every_reference_resolves() -> None:
    """secretKeyRef, configMapKeyRef, envFrom, volumes and KEDA's secretTargetRef name what the manifests hold."""
    refs = 0
    for _, doc in DOCS:
        for node in walk(doc):
            for ref, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                if ref in node:
                    refs += 1
                    assert not node[ref].get("optional"), f"optional {ref}: a missing key would pass silently"
                    assert node[ref]["key"] in data_keys(kind, node[ref]["name"]), node[ref]
            for ref, kind in (("secretRef", "Secret"), ("configMapRef", "ConfigMap")):
                if isinstance(node.get(ref), dict) and "name" in node[ref]:
                    refs += 1
                    assert find(kind, node[ref]["name"])
            if "claimName" in node:
                refs += 1
                assert find("PersistentVolumeClaim", node["claimName"])
            if isinstance(node.get("secretTargetRef"), list):
                for target in node["secretTargetRef"]:
                    refs += 1
                    assert target["key"] in data_keys("Secret", target["name"]), target
    assert refs >= 10, "the walker found almost no references: is it still looking at the right fields?"


def test_service_reaches_the_uvicorn_port(compose: dict[str, Doc]) -> None:
    api, service = find("Deployment", "api"), find("Service", "api")
    container = only_container(api)
    assert container["command"] == compose["api"]["command"], "the api command drifted from docker-compose.yml"
    uvicorn_port = int(option(container["command"], "--port") or 0)
    ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
    assert list(ports.values()) == [uvicorn_port]
    assert service["spec"].get("type", "ClusterIP") == "ClusterIP"
    [port] = service["spec"]["ports"]
    target = port["targetPort"]
    assert port["port"] == 80 and (ports.get(target) if isinstance(target, str) else target) == uvicorn_port
    pod_labels = api["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items(), "the Service selects no api pod"
    assert api["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    api_url = urlsplit(find("ConfigMap", "rft-config")["data"]["API_URL"])
    assert api_url.hostname in ("api", f"api.{NAMESPACE}", f"api.{NAMESPACE}.svc", f"api.{NAMESPACE}.svc.cluster.local")
    assert (api_url.port or 80) == port["port"], "API_URL does not use the Service port"


def test_probes_are_routes_that_answer(app_client: TestClient) -> None:
    container = only_container(find("Deployment", "api"))
    ports = {p.get("name"): p["containerPort"] for p in container["ports"]}
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        if probe in container:
            get = container[probe]["httpGet"]
            assert get["port"] in ports or get["port"] in ports.values(), f"{probe} port {get['port']}"
            response = app_client.get(get["path"])
            assert response.status_code == 200, f"{probe} {get['path']}: {response.status_code} {response.text}"


def test_api_replicas_and_disruption_budget() -> None:
    api, pdb = find("Deployment", "api"), find("PodDisruptionBudget", "api")
    replicas = api["spec"]["replicas"]
    assert replicas >= 2
    assert pdb["spec"]["selector"]["matchLabels"].items() <= api["spec"]["template"]["metadata"]["labels"].items()
    assert 1 <= pdb["spec"]["minAvailable"] < replicas, "a PDB as large as the replicas blocks every node drain"


def test_worker_has_a_gpu_and_no_database_credentials(compose: dict[str, Doc]) -> None:
    worker = find("Deployment", "worker")
    container, pod = only_container(worker), pod_spec(worker)
    assert container["command"] == compose["worker"]["command"], "the worker command drifted from docker-compose"
    assert option(container["command"], "-Q", "--queues") == GPU_QUEUE
    assert option(container["command"], "-c", "--concurrency") == "1"
    resources = container["resources"]
    assert int(resources["limits"]["nvidia.com/gpu"]) == 1
    assert int(resources.get("requests", {}).get("nvidia.com/gpu", 1)) == 1
    assert any(t.get("key") == "nvidia.com/gpu" and t.get("effect") in (None, "NoSchedule") for t in pod["tolerations"])
    env = container_env(container)
    assert not (DB_ENV | {"API_KEY"}) & set(env), f"the worker receives {(DB_ENV | {'API_KEY'}) & set(env)}"
    assert set(env) >= WORKER_NEEDS, f"the worker lacks {WORKER_NEEDS - set(env)}"
    secrets = {node["secretKeyRef"]["name"] for node in walk(container) if "secretKeyRef" in node}
    assert "DATABASE_URL" not in set().union(*(data_keys("Secret", s) for s in secrets)), "a DB secret is referenced"
    stop_grace = WorkerSettings.model_fields["stop_grace_seconds"].default
    assert pod["terminationGracePeriodSeconds"] >= stop_grace, "shorter than the worker's own bound on a step"


@pytest.mark.parametrize("name", SANDBOXED)
def test_catalog_and_work_dirs_are_mounted(name: str) -> None:
    workload = find("Deployment", name)
    container, pod = only_container(workload), pod_spec(workload)
    env = container_env(container)
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    models = mounts.get(resolve(env["MODEL_CATALOG_DIR"]))
    assert models and volumes[models]["persistentVolumeClaim"]["claimName"] == "rft-models", "catalog not mounted"
    if name == "worker":
        work = mounts.get(resolve(env["WORK_DIR"]))
        assert work and "emptyDir" in volumes[work], "WORK_DIR should be the pod's scratch emptyDir"


@pytest.mark.parametrize("name", SANDBOXED)
def test_sandbox_security_context(name: str) -> None:
    """What bubblewrap needs (user/pid/net/mount namespaces, a fresh /proc) and nothing more: no root, no caps."""
    workload = find("Deployment", name)
    pod, container = pod_spec(workload), only_container(workload)
    assert pod.get("hostUsers") is False, "procMount Unmasked is only allowed in a user-namespaced pod"
    assert effective(pod, container, "procMount") == "Unmasked", "bwrap cannot mount /proc under masked paths"
    seccomp, apparmor = effective(pod, container, "seccompProfile"), effective(pod, container, "appArmorProfile")
    assert seccomp and seccomp["type"] in ("Unconfined", "Localhost"), "the runtime default refuses unshare"
    assert apparmor and apparmor["type"] in ("Unconfined", "Localhost"), "the runtime default refuses mount"
    for profile in (seccomp, apparmor):
        assert profile["type"] != "Localhost" or profile.get("localhostProfile"), profile
    assert effective(pod, container, "allowPrivilegeEscalation") is False
    assert not effective(pod, container, "privileged")
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert not container["securityContext"]["capabilities"].get("add")
    assert effective(pod, container, "runAsNonRoot") is True
    assert effective(pod, container, "runAsUser") == SANDBOX_UID
    assert pod.get("automountServiceAccountToken") is False and pod.get("enableServiceLinks") is False


def test_only_sandboxed_pods_loosen_security() -> None:
    """Every other pod keeps the restricted Pod Security level: RuntimeDefault seccomp, no caps, non-root."""
    loosened = set()
    for workload in workloads():
        pod = pod_spec(workload)
        for container in pod["containers"]:
            seccomp, apparmor = (effective(pod, container, f) or {} for f in ("seccompProfile", "appArmorProfile"))
            if (
                "Unconfined" in (seccomp.get("type"), apparmor.get("type"))
                or effective(pod, container, "procMount") == "Unmasked"
            ):
                loosened.add(workload["metadata"]["name"])
                continue
            assert seccomp.get("type") in ("RuntimeDefault", "Localhost"), f"{container['name']}: seccomp"
            assert effective(pod, container, "allowPrivilegeEscalation") is False, container["name"]
            assert container.get("securityContext", {}).get("capabilities", {}).get("drop") == ["ALL"]
            assert effective(pod, container, "runAsNonRoot") is True, container["name"]
    assert loosened == set(SANDBOXED), f"sandbox options on {loosened}"


def test_images_are_the_compose_builds(compose: dict[str, Doc]) -> None:
    """rft-api (api, migrate) and rft-worker (worker; inference: built with vLLM) are the images compose builds
    from deploy/Dockerfile.*."""
    for workload in workloads():
        service = {"api": "api", "migrate": "api", "worker": "worker", "inference": "inference"}[component(workload)]
        dockerfile = compose[service]["build"]["dockerfile"]
        image = {"inference": "worker"}.get(service, service)
        assert dockerfile == f"deploy/Dockerfile.{image}", f"{service} is built from {dockerfile}"
        for container in pod_spec(workload)["containers"]:
            assert container["image"] == compose[service]["image"], f"{container['name']}: {container['image']}"
        users = re.findall(r"^USER\s+(\S+)", (ROOT / dockerfile).read_text(), flags=re.MULTILINE)
        assert users[-1:] == [str(SANDBOX_UID)], f"{dockerfile}: USER {users}, not the uid the pods run as"


def test_migration_job_runs_alembic_before_the_rollout() -> None:
    job, api = find("Job", "migrate"), find("Deployment", "api")
    container = only_container(job)
    assert container["command"] == ["alembic", "upgrade", "head"]
    assert container["image"] == only_container(api)["image"]
    assert set(container_env(container)) == {"DATABASE_URL"}
    assert pod_spec(job)["restartPolicy"] in ("Never", "OnFailure") and job["spec"]["backoffLimit"] <= 3
    wave = "argocd.argoproj.io/sync-wave"
    for name in SANDBOXED:
        deployment = find("Deployment", name)
        assert int(deployment["metadata"]["annotations"][wave]) > int(job["metadata"]["annotations"][wave]), name
    # deploy/README.md applies `-l 'app.kubernetes.io/component in (config,migrate)'` first: that must be enough.
    needed = {("Namespace", NAMESPACE)}
    needed |= {("Secret", n["secretKeyRef"]["name"]) for n in walk(job) if "secretKeyRef" in n}
    needed |= {("ConfigMap", n["configMapKeyRef"]["name"]) for n in walk(job) if "configMapKeyRef" in n}
    for kind, name in needed:
        assert find(kind, name)["metadata"]["labels"]["app.kubernetes.io/component"] in ("config", "migrate"), name
    assert job["metadata"]["labels"]["app.kubernetes.io/component"] == "migrate"


def test_keda_scaled_object_watches_the_gpu_queue(app_client: TestClient) -> None:
    scaled = find("ScaledObject", "worker")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    target = scaled["spec"]["scaleTargetRef"]
    assert target["name"] == "worker" and target.get("kind", "Deployment") == "Deployment"
    assert target.get("apiVersion", "apps/v1") == "apps/v1" and find("Deployment", "worker")
    low, high = scaled["spec"].get("minReplicaCount", 0), scaled["spec"]["maxReplicaCount"]
    assert low in (0, 1) and high >= max(low, 1)
    triggers = {t["type"]: t for t in scaled["spec"]["triggers"]}
    redis = triggers["redis"]["metadata"]
    worker_queue = option(only_container(find("Deployment", "worker"))["command"], "-Q", "--queues")
    assert redis["listName"] == GPU_QUEUE == worker_queue, "KEDA watches another list than the queue"
    broker = urlsplit(resolve({"secretKeyRef": {"name": "rft-shared", "key": "BROKER_URL"}}))
    assert redis["address"] == f"{broker.hostname}:{broker.port or 6379}", "KEDA watches another Redis"
    assert redis.get("databaseIndex", "0") == (broker.path.strip("/") or "0")
    assert (redis.get("enableTLS", "false") == "true") == (broker.scheme == "rediss")
    if broker.password:
        auth = find("TriggerAuthentication", triggers["redis"]["authenticationRef"]["name"])
        assert [t["parameter"] for t in auth["spec"]["secretTargetRef"]] == ["password"]
    if "prometheus" in triggers:
        query = triggers["prometheus"]["metadata"]["query"]
        exported = set(re.findall(r"^# TYPE (\w+)", app_client.get("/metrics").text, flags=re.MULTILINE))
        used = set(re.findall(r"\b(rft_\w+)\b", query))
        assert used and used <= exported, f"the query uses {used - exported}, which /metrics does not export"
        for states in re.findall(r'state=~"([^"]+)"', query):
            assert set(states.split("|")) <= {s.value for s in JobStatus}, states


def test_hpa_example_scales_the_worker() -> None:
    """The KEDA-free alternative (an External metric from an adapter) targets the same Deployment."""
    hpa = find("HorizontalPodAutoscaler", "worker")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert [m["type"] for m in hpa["spec"]["metrics"]] == ["External"]


# ---------------------------------------------------------------- the inference fleet


def test_each_model_deployment_has_a_headless_service_of_its_own() -> None:
    """A Deployment per base model, its ready pods listed by a headless Service (the api's dns+ replicas): the
    Service selects that Deployment's pods and no other model's, on the port the server listens on."""
    deployments = inference_deployments()
    assert inference_deployments(base_only=True), "no inference Deployment in the kustomization"
    models = [served_model(d) for d in deployments]
    assert len(models) == len(set(models)), f"a base model served by two Deployments: {models}"
    headless = [d for _, d in RESOURCES if d["kind"] == "Service" and d["spec"].get("clusterIP") == "None"]
    for deployment in deployments:
        name, model = deployment["metadata"]["name"], served_model(deployment)
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selects(deployment["spec"]["selector"]["matchLabels"], pod_labels), name
        assert pod_labels.get("rft/base-model") == deployment["metadata"]["labels"].get("rft/base-model") == model
        assert "replicas" not in deployment["spec"], f"{name}: a replicas field is written over the autoscaler's"
        container = only_container(deployment)
        assert option(container["command"], "--host") == "0.0.0.0", f"{name}: the server must listen on the pod IP"
        server_port = int(option(container["command"], "--port") or 0)
        assert [p["containerPort"] for p in container["ports"]] == [server_port], name
        assert container["readinessProbe"]["httpGet"]["path"] == "/v1/models", "ready only once the model loads"
        [service] = [s for s in headless if selects(s["spec"]["selector"], pod_labels)] or [None]
        assert service is not None, f"{name}: no headless Service (clusterIP: None) selects its pods"
        assert not service["spec"].get("publishNotReadyAddresses"), "DNS would list pods still loading the model"
        for other in deployments:
            if other is not deployment:
                other_labels = other["spec"]["template"]["metadata"]["labels"]
                assert not selects(service["spec"]["selector"], other_labels), f"{name}'s Service selects {model}"
        [port] = service["spec"]["ports"]
        # headless: no port mapping, the api connects to the pod's own port
        assert port["port"] == port_number(container, port["targetPort"]) == server_port, name
        budgets = [
            d
            for _, d in RESOURCES
            if d["kind"] == "PodDisruptionBudget" and selects(d["spec"]["selector"]["matchLabels"], pod_labels)
        ]
        assert [b["spec"].get("maxUnavailable") for b in budgets] == [1], f"{name}: drains one replica at a time"


def test_inference_pods_keep_their_posture_and_admit_only_the_api() -> None:
    policy = find("NetworkPolicy", "inference")
    api_labels = find("Deployment", "api")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    [rule] = policy["spec"]["ingress"]
    assert [selects(f["podSelector"]["matchLabels"], api_labels) for f in rule["from"]] == [True], rule["from"]
    config = find("ConfigMap", "rft-config")["data"]
    adapter_dir = config.get("INFERENCE_ADAPTER_SERVER_DIR", config["INFERENCE_ADAPTER_DIR"])
    for deployment in inference_deployments():
        name, pod, container = deployment["metadata"]["name"], pod_spec(deployment), only_container(deployment)
        assert selects(
            policy["spec"]["podSelector"]["matchLabels"], deployment["spec"]["template"]["metadata"]["labels"]
        )
        assert [port_number(container, p["port"]) for p in rule["ports"]] == [
            p["containerPort"] for p in container["ports"]
        ]
        assert pod.get("automountServiceAccountToken") is False and pod.get("enableServiceLinks") is False, name
        assert effective(pod, container, "seccompProfile") == {"type": "RuntimeDefault"}, name
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}, name
        assert effective(pod, container, "runAsNonRoot") is True and effective(pod, container, "runAsUser"), name
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        volumes = {v["name"]: v for v in pod["volumes"]}
        adapters = mounts.get(adapter_dir)
        assert adapters and adapters.get("readOnly"), f"{name}: adapters not mounted read-only at {adapter_dir}"
        assert volumes[adapters["name"]]["persistentVolumeClaim"]["claimName"] == "rft-adapters", name
        assert option(container["command"], "--max-cpu-loras") == config["INFERENCE_MAX_ADAPTERS"], name


def test_inference_endpoints_name_each_models_headless_service(monkeypatch: pytest.MonkeyPatch) -> None:
    """The api's INFERENCE_ENDPOINTS: valid JSON, as the api reads it; each base model of the kustomization by a
    ``dns+http://`` URL of its headless Service and the server's port; on-demand serving off."""
    config = find("ConfigMap", "rft-config")["data"]
    for key, value in config.items():
        monkeypatch.setenv(key, value)
    settings = ApiSettings(_env_file=None)  # type: ignore[call-arg]
    endpoints = json.loads(config["INFERENCE_ENDPOINTS"])
    assert settings.inference_endpoints == endpoints
    assert "INFERENCE_BASE_URL" not in config, "the fleet names each model's replicas (INFERENCE_ENDPOINTS)"
    assert settings.serves_on_demand is False, "on demand needs the worker side (worker.yaml): off unless chosen"
    by_service = {
        s["metadata"]["name"]: (s, d)
        for d in inference_deployments(base_only=True)
        for _, s in RESOURCES
        if s["kind"] == "Service"
        and s["spec"].get("clusterIP") == "None"
        and selects(s["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])
    }
    named = set()
    for model, urls in endpoints.items():
        assert isinstance(urls, list) and urls, model
        for url in urls:
            assert url.startswith("dns+http://"), f"{model}: {url} is one address, not the Service's pods"
            parsed = urlsplit(url.removeprefix("dns+"))
            [name] = [n for n in by_service if parsed.hostname in service_hosts(n)] or [None]
            assert name is not None, f"{model}: {parsed.hostname} is no headless Service of an inference Deployment"
            service, deployment = by_service[name]
            assert served_model(deployment) == model, f"{url} reaches {served_model(deployment)}, not {model}"
            assert parsed.port == service["spec"]["ports"][0]["port"], f"{url}: not the server's port"
            assert parsed.path.rstrip("/") == "/v1", url
            named.add(name)
    assert named == set(by_service), f"inference Deployments the api does not route to: {set(by_service) - named}"


def test_worker_can_serve_on_demand() -> None:
    """With INFERENCE_ON_DEMAND on, a worker serves on a port of INFERENCE_SERVE_PORTS at its pod IP: api pods may
    connect to that range, worker pods to each other (multi-node jobs), nobody else; the adapters at the api's path."""
    worker, policy = find("Deployment", "worker"), find("NetworkPolicy", "worker")
    container, pod = only_container(worker), pod_spec(worker)
    labels = worker["spec"]["template"]["metadata"]["labels"]
    api_labels = find("Deployment", "api")["spec"]["template"]["metadata"]["labels"]
    assert selects(policy["spec"]["podSelector"]["matchLabels"], labels)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules = policy["spec"]["ingress"]

    def only_from(rule: Doc, pod_labels: dict[str, str]) -> bool:
        """Every source of the rule is a pod selector (of this namespace) that selects ``pod_labels``."""
        sources = rule.get("from") or [{}]  # no `from`: any source
        return all(set(f) == {"podSelector"} and selects(f["podSelector"]["matchLabels"], pod_labels) for f in sources)

    assert len(rules) == 2, "only workers and the api reach a worker"
    [from_workers] = [r for r in rules if only_from(r, labels)]
    assert from_workers.get("ports") is None, "multi-node jobs use ports picked at run time"
    [from_api] = [r for r in rules if only_from(r, api_labels)]
    [ports] = from_api["ports"]
    env = container_env(container)
    field = WorkerSettings.model_fields.get("inference_serve_ports")
    if field is None:
        pytest.skip("the worker has no INFERENCE_SERVE_PORTS setting")
    serve_ports = resolve(env["INFERENCE_SERVE_PORTS"]) if "INFERENCE_SERVE_PORTS" in env else field.default
    low, high = (int(p) for p in serve_ports.split("-"))
    assert (ports["port"], ports.get("endPort", ports["port"]), ports["protocol"]) == (low, high, "TCP")
    assert env["ADVERTISE_ADDR"] == {"fieldRef": {"fieldPath": "status.podIP"}}, "where the api reaches a replica"
    config = find("ConfigMap", "rft-config")["data"]
    adapter_dir = config.get("INFERENCE_ADAPTER_SERVER_DIR", config["INFERENCE_ADAPTER_DIR"])
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts.get(adapter_dir, {}).get("readOnly"), f"adapters not mounted read-only at {adapter_dir}"
    assert volumes[mounts[adapter_dir]["name"]]["persistentVolumeClaim"]["claimName"] == "rft-adapters"


def test_inference_autoscalers_scale_model_deployments_on_vllm_metrics() -> None:
    """The examples' HPA and ScaledObject target an inference Deployment, on vLLM's requests in flight (not CPU),
    never to zero (no pod, no metric to wake it), with the same numbers (they are alternatives); the PodMonitor
    scrapes the inference pods on their server port, which a NetworkPolicy opens to Prometheus."""
    models = {d["metadata"]["name"]: served_model(d) for d in inference_deployments()}
    hpas = {
        d["spec"]["scaleTargetRef"]["name"]: d
        for _, d in RESOURCES
        if d["kind"] == "HorizontalPodAutoscaler" and d["spec"]["scaleTargetRef"]["name"] in models
    }
    scaled = {
        d["spec"]["scaleTargetRef"]["name"]: d
        for _, d in RESOURCES
        if d["kind"] == "ScaledObject" and d["spec"]["scaleTargetRef"]["name"] in models
    }
    assert hpas and scaled, "no autoscaling example for the inference Deployments"
    for name, hpa in hpas.items():
        assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
        assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
        [metric] = hpa["spec"]["metrics"]
        assert metric["type"] == "Pods" and metric["pods"]["target"]["type"] == "AverageValue", metric
        assert metric["pods"]["metric"]["name"].startswith("vllm_"), metric
    for name, obj in scaled.items():
        target = obj["spec"]["scaleTargetRef"]
        assert target.get("kind", "Deployment") == "Deployment" and target.get("apiVersion", "apps/v1") == "apps/v1"
        low, high = obj["spec"].get("minReplicaCount", 0), obj["spec"]["maxReplicaCount"]
        assert 1 <= low <= high, f"{name}: scaled to zero nothing would wake it"
        [trigger] = obj["spec"]["triggers"]
        query = trigger["metadata"]["query"]
        assert (
            trigger["type"] == "prometheus" and trigger["metadata"].get("metricType", "AverageValue") == "AverageValue"
        )
        assert set(re.findall(r"\b(vllm:\w+)", query)) == {"vllm:num_requests_running", "vllm:num_requests_waiting"}
        assert set(re.findall(r'model_name="([^"]+)"', query)) == {models[name]}, f"{name}: another model's series"
        if name in hpas:
            spec = hpas[name]["spec"]
            assert (low, high) == (spec["minReplicas"], spec["maxReplicas"]), f"{name}: the examples disagree"
            assert trigger["metadata"]["threshold"] == spec["metrics"][0]["pods"]["target"]["averageValue"], name
    monitor = find("PodMonitor", "inference")
    scrape = find("NetworkPolicy", "inference-metrics")
    for deployment in inference_deployments():
        labels, container = deployment["spec"]["template"]["metadata"]["labels"], only_container(deployment)
        assert selects(monitor["spec"]["selector"]["matchLabels"], labels)
        assert selects(scrape["spec"]["podSelector"]["matchLabels"], labels)
        [endpoint] = monitor["spec"]["podMetricsEndpoints"]
        assert endpoint["path"] == "/metrics"
        [rule] = scrape["spec"]["ingress"]
        assert port_number(container, endpoint["port"]) == port_number(container, rule["ports"][0]["port"])
