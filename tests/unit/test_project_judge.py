"""A score_model grader with a project's own judge (``endpoint`` + ``api_key_secret``): its schema, the endpoint
check on tiny inputs, the judge called with the key from the claim and never quoting it, the job's and the eval's
creation refusing what they must, and the claim carrying the key to the job that names it.

tests/integration/test_secrets.py trains a job with such a judge on real services."""

from __future__ import annotations

import ipaddress
import json
import random
import socket
import string
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr, TypeAdapter, ValidationError

from api.core.settings import ApiSettings
from grpo_core.errors import UserError
from grpo_core.rewards.base import GraderEnv, InvalidVariable, JudgeReplyError, JudgeRequestError
from grpo_core.rewards.graders import build_grader
from grpo_core.rewards.judge import JudgeNotConfigured
from grpo_core.schemas.endpoints import EndpointRefused, check_addresses, check_form
from grpo_core.schemas.graders import GraderSpec, ScoreModelGrader, named_secrets, own_judges
from runtime import internal as api
from runtime.eval_contract import EvalClaim
from tests.helpers import ARITH_ROWS, claim, job_body, jsonl
from tests.tiny_model import TINY_ID
from tests.unit.test_tenants import bearer, new_key
from worker.evals import check_eval_secrets
from worker.settings import WorkerSettings
from worker.tracking import check_secrets

SPEC: TypeAdapter[Any] = TypeAdapter(GraderSpec)
JOBS = "/v1/fine_tuning/jobs"
WORKER = {"Authorization": "Bearer t0k"}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"reaper": False, "webhook_dispatcher": False, "max_devices_per_node": 2}


def letters(n: int = 40) -> str:
    """A key of letters only: a judge's reply that echoes it then holds no number of its own."""
    return "sk" + "".join(random.choices(string.ascii_letters, k=n))


KEY = letters()


class _Judge(BaseHTTPRequestHandler):
    """An OpenAI-compatible judge wanting KEY: 0.75 for a known key; an unknown key is a 401 quoting it; a message
    asking for an echo gets the Authorization header back (no number in it)."""

    seen: list[dict[str, Any]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        auth = self.headers.get("authorization")
        _Judge.seen.append({"path": self.path, "auth": auth, "body": body})
        if auth != f"Bearer {KEY}":
            self._send(401, {"error": {"message": f"unknown key {auth}"}})
            return
        echo = "echo" in body["messages"][-1]["content"]
        self._send(
            200, {"choices": [{"message": {"role": "assistant", "content": f"you sent {auth}" if echo else "0.75"}}]}
        )

    def _send(self, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def judge_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Judge)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def judge(endpoint: str | None, secret: str | None = "judge", **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "type": "score_model",
        "name": "judge",
        "model": "gpt-4o-mini",
        "input": [{"role": "user", "content": "Score {{sample.output_text}} against {{item.answer}}"}],
    } | extra
    if endpoint is not None:
        spec["endpoint"] = endpoint
    if secret is not None:
        spec["api_key_secret"] = secret
    return spec


# ---------------------------------------------------------------- the schema and the endpoint check


def test_without_an_endpoint_the_grader_is_exactly_openais() -> None:
    plain = ScoreModelGrader.model_validate(judge(None, None))
    assert "endpoint" not in plain.model_dump() and "api_key_secret" not in plain.model_dump(mode="json")
    own = ScoreModelGrader.model_validate(judge("https://api.openai.com/v1/", "openai"))
    assert own.model_dump(mode="json")["endpoint"] == "https://api.openai.com/v1"  # no trailing slash
    assert own.model_dump()["api_key_secret"] == "openai"
    with pytest.raises(ValidationError, match="set endpoint too"):
        ScoreModelGrader.model_validate(judge(None, "openai"))
    with pytest.raises(ValidationError, match="api_key_secret"):
        ScoreModelGrader.model_validate(judge("https://x.example/v1", "no spaces"))


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("ftp://judge.example/v1", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("https://user:pw@judge.example/v1", "user or password"),
        ("https://judge.example/v1?key=x", "no query"),
        ("https:///v1", "no host"),
        ("https://judge.example:99999/v1", "not a URL"),
    ],
)
def test_an_endpoint_of_the_wrong_form_is_refused(url: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_form(url)


@pytest.mark.parametrize(
    ("host", "private_ok", "refused"),
    [
        ("169.254.169.254", True, "link-local"),  # the metadata service: never, whatever the operator allows
        ("[fe80::1]", True, "link-local"),
        ("[::ffff:169.254.169.254]", True, "link-local"),
        ("0.0.0.0", True, "not an address"),
        ("127.0.0.1", False, "loopback or private"),
        ("localhost", False, "loopback or private"),
        ("10.1.2.3", False, "loopback or private"),
        ("100.64.0.1", False, "loopback or private"),
        ("[fd00::1]", False, "loopback or private"),
        ("127.0.0.1", True, None),
        ("10.1.2.3", True, None),
        ("8.8.8.8", False, None),
        ("judge.example", False, None),  # a name is not looked up without resolve
    ],
)
def test_addresses_as_written(host: str, private_ok: bool, refused: str | None) -> None:
    url = f"http://{host}:8000/v1"
    if refused is None:
        check_addresses(url, allow_private=private_ok, resolve=False)
    else:
        with pytest.raises(EndpointRefused, match=refused):
            check_addresses(url, allow_private=private_ok, resolve=False)


def test_the_worker_checks_every_address_a_name_resolves_to(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"ok.example": ["93.184.215.14"], "meta.example": ["93.184.215.14", "169.254.169.254"]}

    def fake(host: str, *args: Any, **kwargs: Any) -> list[Any]:
        if host not in answers:
            raise socket.gaierror("Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    check_addresses("https://ok.example/v1", allow_private=False, resolve=True)
    with pytest.raises(EndpointRefused, match=r"169\.254\.169\.254 is a link-local"):
        check_addresses("https://meta.example/v1", allow_private=True, resolve=True)
    with pytest.raises(EndpointRefused, match="does not resolve"):
        check_addresses("https://nowhere.example/v1", allow_private=True, resolve=True)
    assert ipaddress.ip_address("93.184.215.14").is_global


def test_private_endpoints_default_to_the_single_machine_only() -> None:
    assert ApiSettings(_env_file=None).private_endpoints_allowed
    shared = ApiSettings(_env_file=None, broker_url="redis://r:6379/0", worker_token="t")
    assert not shared.private_endpoints_allowed
    allowed = ApiSettings(_env_file=None, broker_url="redis://r", judge_private_endpoints=True)
    assert allowed.private_endpoints_allowed
    assert not WorkerSettings(_env_file=None, broker_url="redis://r").grader_env({}).private_endpoints


# ---------------------------------------------------------------- the judge on the worker


def own_env(**kw: Any) -> GraderEnv:
    return GraderEnv(**{"private_endpoints": True, "secrets": {"judge": SecretStr(KEY)}} | kw)


def test_the_judge_is_called_with_the_projects_key(judge_url: str) -> None:
    _Judge.seen.clear()
    grader = build_grader(SPEC.validate_python(judge(judge_url)), own_env())
    res = grader.score(["4", "5"], [{"answer": "4"}] * 2)
    grader.close()
    assert res.scores == [0.75, 0.75] and res.errors == [None, None]
    assert {s["auth"] for s in _Judge.seen} == {f"Bearer {KEY}"}
    assert {s["path"] for s in _Judge.seen} == {"/v1/chat/completions"}
    assert sorted(s["body"]["messages"][0]["content"] for s in _Judge.seen) == [
        "Score 4 against 4",
        "Score 5 against 4",
    ]
    assert KEY not in repr(own_env())  # the env a grader holds never shows the key


def test_a_failed_or_echoing_judge_never_quotes_the_key(judge_url: str) -> None:
    wrong = letters()
    grader = build_grader(SPEC.validate_python(judge(judge_url)), own_env(secrets={"judge": SecretStr(wrong)}))
    res = grader.score(["4"], [{"answer": "4"}])  # 401, whose body quotes the key it was sent
    assert isinstance(res.errors[0], JudgeRequestError) and "401" in str(res.errors[0])
    assert wrong not in str(res.errors[0])
    echoing = judge(judge_url, input=[{"role": "user", "content": "echo {{sample.output_text}}"}])
    grader = build_grader(SPEC.validate_python(echoing), own_env())
    res = grader.score(["4"], [{}])
    assert isinstance(res.errors[0], JudgeReplyError) and "you sent Bearer [secret]" in str(res.errors[0])
    assert KEY not in str(res.errors[0]) and KEY not in repr(res.errors[0])
    down = build_grader(SPEC.validate_python(judge("http://127.0.0.1:9/v1")), own_env())  # nothing listens
    res = down.score(["4"], [{"answer": "4"}])
    assert isinstance(res.errors[0], JudgeRequestError) and KEY not in str(res.errors[0])


def test_the_worker_refuses_what_it_may_not_call_or_has_no_key_for(judge_url: str) -> None:
    with pytest.raises(JudgeNotConfigured, match="loopback or private"):
        build_grader(SPEC.validate_python(judge(judge_url)), own_env(private_endpoints=False))
    with pytest.raises(JudgeNotConfigured, match="link-local"):
        build_grader(SPEC.validate_python(judge("http://169.254.169.254/v1")), own_env())
    with pytest.raises(JudgeNotConfigured, match=r"project secret 'judge'.*not available"):
        build_grader(SPEC.validate_python(judge(judge_url)), own_env(secrets={}))
    _Judge.seen.clear()
    keyless = build_grader(SPEC.validate_python(judge(judge_url, None)), own_env())
    keyless.score(["4"], [{"answer": "4"}])  # this judge wants a key: a 401
    assert _Judge.seen[0]["auth"] is None  # no key named: none sent (not the service's own)


def test_the_apis_checks_render_the_messages_and_call_nothing(judge_url: str) -> None:
    _Judge.seen.clear()
    env = GraderEnv(secrets={}, call_own_judges=False)  # the API: no key, and private addresses not its to call
    grader = build_grader(SPEC.validate_python(judge(judge_url)), env)
    res = grader.score(["", ""], [{"answer": "4"}, {}])
    assert isinstance(res.errors[0], JudgeRequestError) and "not called here" in str(res.errors[0])
    assert isinstance(res.errors[1], InvalidVariable)
    assert _Judge.seen == []


def test_the_secrets_a_grader_names_by_field() -> None:
    multi = {
        "type": "multi",
        "graders": {"a": judge("https://x.example/v1", "one"), "b": judge(None, None), "c": judge("https://y.example")},
        "calculate_output": "a + b + c",
    }
    assert named_secrets(multi) == {
        "grader.graders.a.api_key_secret": "one",
        "grader.graders.c.api_key_secret": "judge",
    }
    assert named_secrets(judge(None, None)) == {} and named_secrets({"type": "python"}) == {}
    assert list(own_judges(SPEC.validate_python(multi), "g")) == ["g.graders.a", "g.graders.c"]


def test_a_claim_without_the_named_secret_fails_saying_which() -> None:
    grader = {"type": "multi", "graders": {"j": judge("https://x.example/v1")}, "calculate_output": "j"}
    check_secrets(claim(grader=grader, secrets={"judge": "v" * 20}))
    with pytest.raises(UserError, match=r"grader\.graders\.j\.api_key_secret: the project secret 'judge'"):
        check_secrets(claim(grader=grader))
    run = {
        "run_id": "r",
        "base_model": "m",
        "file_key": "k",
        "template": [],
        "sampling": {},
        "criteria": [{"name": "j", "grader": judge("https://x.example/v1"), "pass_threshold": 0.5}],
    }
    check_eval_secrets(EvalClaim.model_validate(run | {"secrets": {"judge": "v"}}))
    with pytest.raises(UserError, match=r"testing_criteria\[0\]\.api_key_secret: the project secret 'judge'"):
        check_eval_secrets(EvalClaim.model_validate(run))


# ---------------------------------------------------------------- the API


def upload(client: TestClient, headers: dict[str, str] | None = None) -> str:
    r = client.post(
        "/v1/files", data={"purpose": "fine-tune"}, files={"file": ("d.jsonl", jsonl(ARITH_ROWS))}, headers=headers
    )
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def error(r: Any) -> tuple[int, str, str]:
    return r.status_code, r.json()["error"]["param"], r.json()["error"]["message"]


def test_a_job_with_its_projects_judge_is_claimed_with_the_key(client: TestClient, judge_url: str) -> None:
    file_id = upload(client)
    body = job_body(TINY_ID, file_id, grader=judge(judge_url))
    status, param, message = error(client.post(JOBS, json=body))
    assert (status, param) == (422, "method.reinforcement.grader.api_key_secret") and "'judge'" in message
    assert client.post("/v1/secrets", json={"name": "judge", "value": KEY}).status_code == 201
    _Judge.seen.clear()
    made = client.post(JOBS, json=body)
    assert made.status_code == 201, made.text
    assert _Judge.seen == []  # creating the job rendered the judge's messages; the API called nothing
    assert made.json()["method"]["reinforcement"]["grader"]["api_key_secret"] == "judge" and KEY not in made.text
    r = client.post(
        f"/internal/jobs/{made.json()['id']}/claim", json={"worker_id": "w", "claim_id": "c" * 8}, headers=WORKER
    )
    assert r.status_code == 200, r.text
    held = api.ClaimResponse.model_validate(r.json())
    assert held.secrets["judge"].get_secret_value() == KEY and KEY not in repr(held)
    check_secrets(held)
    grader = build_grader(SPEC.validate_python(held.grader), WorkerSettings().grader_env(held.secrets))
    assert grader.score(["4"], [{"answer": "4"}]).scores == [0.75]
    assert _Judge.seen[-1]["auth"] == f"Bearer {KEY}"


def test_what_a_job_may_not_name_is_refused_with_the_field(client: TestClient, settings: ApiSettings) -> None:
    file_id = upload(client)
    client.post("/v1/secrets", json={"name": "judge", "value": KEY})

    def create(grader: dict[str, Any], **extra: Any) -> Any:
        return client.post(JOBS, json=job_body(TINY_ID, file_id, grader=grader) | extra)

    status, param, message = error(create(judge("http://169.254.169.254/latest/v1")))
    assert (status, param) == (400, "method.reinforcement.grader.endpoint") and "link-local" in message
    multi = {"type": "multi", "graders": {"j": judge("http://[fe80::1]/v1")}, "calculate_output": "j"}
    assert error(create(multi))[:2] == (400, "method.reinforcement.grader.graders.j.endpoint")
    status, param, message = error(create(judge("https://judge.example/v1"), resources={"devices": 2}))
    assert (status, param) == (400, "method.reinforcement.grader.api_key_secret") and "one training process" in message
    keyless = create(judge("https://judge.example/v1", None), resources={"devices": 2})  # no key to carry: fine
    assert keyless.status_code == 201, keyless.text
    bad = create(judge("ftp://judge.example/v1"))
    assert bad.status_code == 422 and "http:// or https://" in bad.text
    # another project: the secret is not there, and the answer is a never-written name's
    _, _, key_b = new_key(settings, name="B")
    theirs = client.post(
        JOBS,
        json=job_body(TINY_ID, upload(client, bearer(key_b)), grader=judge("https://j.example/v1")),
        headers=bearer(key_b),
    )
    assert error(theirs)[:2] == (422, "method.reinforcement.grader.api_key_secret")
    assert (
        error(theirs)[2]
        == "no secret named 'judge' in this project: write it first (POST /v1/secrets, or `rft secrets set`)"
    )
    assert KEY not in theirs.text


def test_graders_validate_checks_it_and_run_refuses_it(client: TestClient) -> None:
    url = "/v1/fine_tuning/alpha/graders"
    missing = client.post(f"{url}/validate", json={"grader": judge("https://judge.example/v1")})
    assert error(missing)[:2] == (422, "grader.api_key_secret")
    client.post("/v1/secrets", json={"name": "judge", "value": KEY})
    ok = client.post(f"{url}/validate", json={"grader": judge("https://judge.example/v1")})
    assert ok.status_code == 200 and ok.json()["grader"]["endpoint"] == "https://judge.example/v1"
    run = client.post(f"{url}/run", json={"grader": judge("https://judge.example/v1"), "model_sample": "4", "item": {}})
    assert run.status_code == 400 and run.json()["error"]["code"] == "own_judge_not_run"


def test_an_eval_names_its_projects_secret_and_its_run_is_claimed_with_it(
    client: TestClient, settings: ApiSettings
) -> None:
    criteria = [judge("https://judge.example/v1") | {"pass_threshold": 0.5}]
    body = {"name": "e", "data_source_config": {"type": "custom", "item_schema": {"type": "object"}}}
    refused = client.post("/v1/evals", json=body | {"testing_criteria": criteria})
    assert error(refused)[:2] == (422, "testing_criteria[0].api_key_secret")
    link_local = [judge("http://169.254.169.254/v1") | {"pass_threshold": 0.5}]
    assert error(client.post("/v1/evals", json=body | {"testing_criteria": link_local}))[:2] == (
        400,
        "testing_criteria[0].endpoint",
    )
    client.post("/v1/secrets", json={"name": "judge", "value": KEY})
    ev = client.post("/v1/evals", json=body | {"testing_criteria": criteria})
    assert ev.status_code == 200 or ev.status_code == 201, ev.text
    source = {"type": "file_content", "content": [{"item": {"q": "1+1="}}]}
    run = client.post(
        f"/v1/evals/{ev.json()['id']}/runs",
        json={
            "data_source": {
                "type": "completions",
                "source": source,
                "input_messages": {"type": "template", "template": [{"role": "user", "content": "{{item.q}}"}]},
                "model": TINY_ID,
            }
        },
    )
    assert run.status_code in (200, 201), run.text
    r = client.post(
        f"/internal/evals/runs/{run.json()['id']}/claim", json={"worker_id": "w", "claim_id": "c" * 8}, headers=WORKER
    )
    assert r.status_code == 200, r.text
    held = EvalClaim.model_validate(r.json())
    assert held.secrets["judge"].get_secret_value() == KEY and KEY not in repr(held)
    check_eval_secrets(held)
