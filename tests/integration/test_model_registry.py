"""The model registry on S3 (moto's server): registration from a folder, an s3:// prefix and the offline hub
cache; the workers' node cache (one download per node, sha256-checked, LRU eviction that spares a model in
use); and a job on a registered model trained by a real Celery worker, which fetched it from S3."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session

from api.core.errors import InvalidRequest
from api.db.models import RegisteredModel
from api.db.session import make_engine, make_sessionmaker
from api.models import service as model_registry
from runtime.settings import CommonSettings
from runtime.storage import S3Store
from tests.helpers import ROOT, job_body, migrate
from tests.integration.flow import all_events
from tests.integration.stack import Stack, wait_status
from worker.model_cache import ModelCache, ModelFetchError

pytestmark = [pytest.mark.integration]


@pytest.fixture
def store(s3: dict[str, str]) -> S3Store:
    settings = CommonSettings(
        s3_endpoint_url=s3["S3_ENDPOINT_URL"],
        s3_bucket=s3["S3_BUCKET"],
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    return S3Store(settings)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[Session]:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    migrate(url)
    engine = make_engine(url)
    with make_sessionmaker(engine)() as s:
        yield s
    engine.dispose()


def variant(src: Path, dest: Path, note: str) -> Path:
    """A copy of ``src`` with one more file: same model, another digest."""
    shutil.copytree(src, dest)
    (dest / "NOTES.txt").write_text(note)
    return dest


def test_registration_from_a_folder_an_s3_prefix_and_the_offline_hub_cache(
    session: Session, store: S3Store, tiny_model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = model_registry.register(session, store, str(tiny_model_dir), model_id="from-folder")
    keys = set(store.list_keys(row.object_prefix))
    assert keys == {row.object_prefix + f["name"] for f in row.files}

    for f in row.files:  # the operator's upload: a plain prefix in some bucket
        store.client.upload_file(str(tiny_model_dir / f["name"]), store.bucket, f"uploads/tiny/{f['name']}")
    from_s3 = model_registry.register(session, store, f"s3://{store.bucket}/uploads/tiny", model_id="from-s3")
    assert from_s3.digest == row.digest and from_s3.files == row.files  # same bytes, same digest
    with pytest.raises(InvalidRequest, match="nothing under"):
        model_registry.register(session, store, f"s3://{store.bucket}/uploads/none/")

    # an offline huggingface_hub cache, laid out as the hub client lays it out
    cache = tmp_path / "hub"
    revision = "0123456789abcdef0123456789abcdef01234567"
    repo = cache / "models--org--tiny"
    shutil.copytree(tiny_model_dir, repo / "snapshots" / revision)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    from_hub = model_registry.register(session, store, "hf://org/tiny")
    assert (from_hub.id, from_hub.hub_id, from_hub.digest) == ("tiny", "org/tiny", row.digest)

    # refusals store nothing
    broken = variant(tiny_model_dir, tmp_path / "broken", "no tokenizer")
    (broken / "tokenizer.json").unlink()
    with pytest.raises(InvalidRequest, match=r"tokenizer\.json"):
        model_registry.register(session, store, str(broken), model_id="broken")
    assert store.list_keys("models/broken/") == []
    assert session.get(RegisteredModel, "broken") is None


def fetch_in_subprocess(
    cache_root: Path, source: dict[str, Any], s3: dict[str, str], hold: float
) -> subprocess.Popen[str]:
    """Another process on the node: fetches the model, says whether it downloaded, keeps it in use ``hold`` s."""
    code = textwrap.dedent(
        f"""
        import json, sys, time
        from pathlib import Path
        from runtime.internal import ModelSource
        from runtime.settings import CommonSettings
        from runtime.storage import S3Store
        from worker.model_cache import ModelCache
        settings = CommonSettings(s3_endpoint_url={s3["S3_ENDPOINT_URL"]!r}, s3_bucket={s3["S3_BUCKET"]!r},
                                  aws_access_key_id="test", aws_secret_access_key="test")
        said = []
        cache = ModelCache(Path({str(cache_root)!r}), 10**12)
        cache.fetch(S3Store(settings), ModelSource.model_validate_json({json.dumps(source)!r}), said.append)
        print("downloaded" if said else "cached", flush=True)
        time.sleep({hold})
        """
    )
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)


def test_the_node_cache_downloads_once_checks_hashes_and_evicts_the_least_recently_used(
    session: Session, store: S3Store, s3: dict[str, str], tiny_model_dir: Path, tmp_path: Path
) -> None:
    a = model_registry.source_of(model_registry.register(session, store, str(tiny_model_dir), model_id="a"))
    b_dir = variant(tiny_model_dir, tmp_path / "b", "b")
    b = model_registry.source_of(model_registry.register(session, store, str(b_dir), model_id="b"))
    root = tmp_path / "cache"

    # two processes of one node ask at once: one downloads, the other waits and finds it
    procs = [fetch_in_subprocess(root, a.model_dump(), s3, 0) for _ in range(2)]
    outs = sorted(p.communicate(timeout=120)[0].strip() for p in procs)
    assert outs == ["cached", "downloaded"], outs
    folder = root / a.digest
    assert sorted(p.name for p in folder.iterdir()) == sorted(f.name for f in a.files)
    assert not list(root.glob(".part-*"))

    said: list[str] = []
    size = sum(f.size for f in a.files)
    cache = ModelCache(root, max_bytes=int(size * 1.5))  # room for one model
    assert cache.fetch(store, a, said.append) == folder and said == []  # cached: no download
    cache.release(a.digest)

    # B does not fit next to A: A, unused now, goes
    assert cache.fetch(store, b, said.append) == root / b.digest
    assert said[0].startswith("Evicted base model " + a.digest[:12]) and said[1].startswith("Fetched base model b")
    assert [e[0] for e in cache.entries()] == [b.digest]
    cache.release(b.digest)

    # A model another process uses is never evicted, even over the cap (said so)
    holder = fetch_in_subprocess(root, b.model_dump(), s3, 30)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "cached"
    said.clear()
    try:
        cache.fetch(store, a, said.append)
        assert {e[0] for e in cache.entries()} == {a.digest, b.digest}
        assert any("exceeds its cap" in m for m in said), said
    finally:
        holder.kill()
        holder.wait()

    # a file that does not match its sha256 fails the fetch and leaves nothing behind
    c_dir = variant(tiny_model_dir, tmp_path / "c", "c")
    c = model_registry.source_of(model_registry.register(session, store, str(c_dir), model_id="c"))
    store.client.put_object(Bucket=store.bucket, Key=c.object_prefix + "NOTES.txt", Body=b"tampered")
    with pytest.raises(ModelFetchError, match=r"NOTES\.txt does not match its sha256"):
        ModelCache(root, 10**12).fetch(store, c)
    assert not (root / c.digest).exists() and not list(root.glob(".part-*"))


@pytest.mark.slow
def test_a_job_on_a_registered_model_is_trained_by_a_worker_that_fetched_it_from_s3(
    worker: Stack, api: httpx.Client, tiny_model_dir: Path, tmp_path: Path
) -> None:
    admin = {"Authorization": f"Bearer {worker.env['ADMIN_TOKEN']}"}
    reg = api.post(
        "/v1/admin/models", json={"source": str(tiny_model_dir), "id": "tiny-hub", "hub_id": "org/tiny"}, headers=admin
    )
    assert reg.status_code == 201, reg.text
    listed = {m["id"]: m for m in api.get("/v1/models").json()["data"]}
    assert listed["tiny-hub"]["architecture"] == "LlamaForCausalLM"
    rows = [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(4)]
    f = api.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("r.jsonl", "\n".join(map(json.dumps, rows)))}
    )
    job = api.post("/v1/fine_tuning/jobs", json=job_body("tiny-hub", f.json()["id"], max_steps=1))
    assert job.status_code == 201, job.text
    done = wait_status(api, job.json()["id"], {"succeeded", "failed", "cancelled"}, 300, worker)
    assert done["status"] == "succeeded", done
    messages = [e["message"] for e in all_events(api, done["id"])]
    assert any(m.startswith("Fetched base model tiny-hub") for m in messages), messages
    ckpt = api.get(f"/v1/fine_tuning/jobs/{done['id']}/checkpoints").json()["data"][0]
    resp = api.get(f"/v1/fine_tuning/jobs/{done['id']}/checkpoints/{ckpt['id']}/content")
    if resp.status_code == 302:
        resp = httpx.get(resp.headers["location"], timeout=30)
    with tarfile.open(fileobj=io.BytesIO(resp.content)) as tar:
        member = tar.extractfile("adapter_config.json")
        assert member is not None
        assert json.loads(member.read())["base_model_name_or_path"] == "org/tiny"  # not the cache's digest folder
