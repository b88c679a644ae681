"""worker.training_api's requests on a real tiny model, without an API (the runner's own answer to each typed
request): each answer is the typed result of the request's own kind (the API shapes the SDK's answer from it:
tests/unit/test_training_sessions.py), a sampling client samples the resident weights while they are the ones it was
saved from and its own copy after, only the newest unnamed saves are kept, and a mistake the API could not see fails
that request as the user's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from runtime import training_api as tc
from tests.tiny_model import TINY_ID
from worker.settings import WorkerSettings
from worker.training_api import resident
from worker.training_api.session import SessionRunner

RUN = "sess-1:train:0"


@pytest.fixture
def runner(tmp_path: Path, catalog_dir: Path) -> Any:
    r = SessionRunner("sess-1", WorkerSettings(state_dir=tmp_path, worker_token="t", model_catalog_dir=catalog_dir))
    r.work.mkdir(parents=True)
    yield r
    r.resident.free()  # what run() does on its way out


def do(runner: SessionRunner, kind: str, payload: dict[str, Any], target: str | None = RUN) -> tc.ResultPost:
    request = tc.parse_request({"kind": kind, **payload})
    return runner.execute(tc.WorkItem(id=f"req-{kind}", target=target, request=request))


def sample(runner: SessionRunner, sampler_id: str, snapshot_of: str | None = RUN) -> tc.ResultPost:
    spec = {"id": sampler_id, "base": {"id": TINY_ID}, "snapshot_of": snapshot_of}
    body = {
        "sampler": spec,
        "prompt": [1, 3, 13],
        "num_samples": 2,
        "max_tokens": 4,
        "temperature": 1.0,
        "top_p": 1.0,
        "seed": 5,
    }
    return do(runner, "sample", body, sampler_id)


def test_a_session_on_the_worker_answers_each_request_with_a_result_of_its_kind(
    runner: SessionRunner, monkeypatch: Any
) -> None:
    monkeypatch.setattr(resident, "MAX_SNAPSHOTS", 2)
    created = do(runner, "create_model", {"base": {"id": TINY_ID}, "rank": 4, "seed": 0})
    assert created.result == tc.CreateModelResult()
    saved = do(runner, "save_weights_for_sampler", {"sampler_id": "sess-1:sample:0"})
    assert saved.result == tc.SaveForSamplerResult(size_bytes=None)  # unnamed: nothing in the store
    first = sample(runner, "sess-1:sample:0")
    assert first.error is None and isinstance(first.result, tc.SampleResult) and len(first.result.sequences) == 2
    assert "sess-1:sample:0" not in runner.resident.loaded  # the resident run sampled: no copy of the model
    data = {"tokens": [1, 3, 13], "inputs": {"target_tokens": [3, 13, 3], "weights": [1.0, 1.0, 1.0]}}
    fb = do(runner, "forward_backward", {"loss_fn": "cross_entropy", "data": [data]})
    assert isinstance(fb.result, tc.ForwardBackwardResult)
    assert set(fb.result.metrics) >= {"loss:sum"} and len(fb.result.logprobs[0]) == 3
    step = do(runner, "optim_step", {"adam": {"learning_rate": 0.05}})
    assert isinstance(step.result, tc.OptimStepResult) and step.result.metrics["learning_rate:mean"] == 0.05
    # the run moved on: the first client samples its saved weights, with a model of its own, the same draw as before
    again = sample(runner, "sess-1:sample:0")
    assert "sess-1:sample:0" in runner.resident.loaded
    assert again.result == first.result
    for n in (1, 2):  # two more unnamed saves: the first is the oldest beyond MAX_SNAPSHOTS = 2
        do(runner, "save_weights_for_sampler", {"sampler_id": f"sess-1:sample:{n}"})
    gone = sample(runner, "sess-1:sample:0")
    assert gone.error is not None and gone.error.category == "user" and "newest 2" in gone.error.message
    assert "sess-1:sample:0" not in runner.resident.loaded
    # a token id beyond the vocabulary: the user's error, and the session goes on
    bad = {"tokens": [1, 10_000], "inputs": {"target_tokens": [3, 4], "weights": [1.0, 1.0]}}
    refused = do(runner, "forward_backward", {"loss_fn": "cross_entropy", "data": [bad]})
    assert refused.error is not None and refused.error.category == "user"
    assert do(runner, "optim_step", {"adam": {}}).error is None


def while_busy(seat: Any, calls: list[Any]) -> dict[int, Any]:
    """Each call's answer, every call started in a thread of its own while the seat's device is busy and let go
    only once all of them wait for it (queued together)."""
    import threading
    import time

    posts: dict[int, Any] = {}
    with seat.device:
        threads = [threading.Thread(target=lambda i=i, c=c: posts.__setitem__(i, c())) for i, c in enumerate(calls)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(seat._waiting) < len(calls):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    for t in threads:
        t.join(timeout=60)
    return posts


def test_sessions_on_one_worker_sample_their_runs_in_one_decode(tmp_path: Path, catalog_dir: Path) -> None:
    """Two sessions in one seat (a worker's pool): sample work both queue while the device is busy runs as one
    decode when it frees, each run through its own adapter (grpo_core.training_api.batched), and each session is
    billed its share of that decode."""

    from worker.training_api.session import Seat

    settings = WorkerSettings(state_dir=tmp_path, worker_token="t", model_catalog_dir=catalog_dir)
    seat = Seat(pooled=True)
    runners = [SessionRunner(f"sess-{n}", settings, seat=seat) for n in (1, 2)]
    items = []
    for n, r in enumerate(runners, start=1):
        r.work.mkdir(parents=True)
        run = f"sess-{n}:train:0"
        assert do(r, "create_model", {"base": {"id": TINY_ID}, "rank": 4, "seed": n}, run).error is None
        assert do(r, "save_weights_for_sampler", {"sampler_id": f"sess-{n}:sample:0"}, run).error is None
        spec = {"id": f"sess-{n}:sample:0", "base": {"id": TINY_ID}, "snapshot_of": run}
        body = {"sampler": spec, "prompt": [1, 3], "num_samples": 3, "max_tokens": 5, "temperature": 1.0, "top_p": 1.0}
        request = tc.parse_request({"kind": "sample", **body})
        items.append(tc.WorkItem(id=f"req-{n}", target=f"sess-{n}:sample:0", request=request))
    assert len(seat.shared) == 1  # one base for both sessions' runs
    posts = while_busy(seat, [lambda i=i: runners[i].execute_samples([items[i]]) for i in (0, 1)])
    for i in (0, 1):
        (post,) = posts[i]
        assert post.error is None and isinstance(post.result, tc.SampleResult), post
        assert post.result.decoded_with == 2 and len(post.result.sequences) == 3  # one decode for both sessions
        assert post.device_seconds > 0
    for r in runners:
        r.resident.free(release_cache=False)
    assert len(seat.shared) == 0


def test_sessions_on_one_worker_share_the_passes_of_their_forward_backward_calls(
    tmp_path: Path, catalog_dir: Path, monkeypatch: Any
) -> None:
    """Two sessions in one seat that works together (POOL_SAMPLE_TOGETHER): forward_backward calls both queue while
    the device is busy run in shared passes when it frees (grpo_core.training_api.together), each billed its
    tokens' share of their seconds; a run created with ``exact`` computes alone in the same batch."""

    from grpo_core.training_api import together
    from worker.training_api.session import Seat

    shared_passes: list[int] = []
    real = together.forward_backward_together
    monkeypatch.setattr(
        together, "forward_backward_together", lambda calls: shared_passes.append(len(calls)) or real(calls)
    )
    settings = WorkerSettings(state_dir=tmp_path, worker_token="t", model_catalog_dir=catalog_dir)
    seat = Seat(pooled=True, together=True)
    runners = [SessionRunner(f"sess-{n}", settings, seat=seat) for n in (1, 2, 3)]
    tokens = [[1, 3, 13, 3], [1, 4, 13, 4, 14, 6, 0, 2], [1, 5, 5]]
    items = []
    for n, (r, seq) in enumerate(zip(runners, tokens, strict=True), start=1):
        r.work.mkdir(parents=True)
        create = {"base": {"id": TINY_ID}, "rank": 4, "seed": n, "exact": n == 3}
        assert do(r, "create_model", create, f"sess-{n}:train:0").error is None
        data = {"tokens": seq[:-1], "inputs": {"target_tokens": seq[1:], "weights": [1.0] * (len(seq) - 1)}}
        request = tc.parse_request({"kind": "forward_backward", "loss_fn": "cross_entropy", "data": [data]})
        items.append(tc.WorkItem(id=f"req-{n}", target=f"sess-{n}:train:0", request=request))
    assert len(seat.shared) == 1
    posts = while_busy(seat, [lambda i=i: runners[i].execute(items[i]) for i in range(3)])
    assert shared_passes == [2]  # sess-1's and sess-2's runs in shared passes; sess-3's (exact) alone
    for i in range(3):
        assert posts[i].error is None and isinstance(posts[i].result, tc.ForwardBackwardResult), posts[i]
    seconds = [posts[i].device_seconds for i in range(3)]
    assert seconds[0] > 0 and seconds[1] / seconds[0] == pytest.approx(7 / 3)  # one batch, billed by tokens
    alone = SessionRunner("sess-9", settings)  # each call again on a worker alone: the same within rounding
    alone.work.mkdir(parents=True)
    try:
        for n in (1, 2, 3):
            create = {"base": {"id": TINY_ID}, "rank": 4, "seed": n}
            assert do(alone, "create_model", create, f"sess-9:train:{n}").error is None
            mine = alone.execute(tc.WorkItem(id=f"again-{n}", target=f"sess-9:train:{n}", request=items[n - 1].request))
            assert isinstance(mine.result, tc.ForwardBackwardResult)
            got = posts[n - 1].result
            assert isinstance(got, tc.ForwardBackwardResult)
            if n == 3:  # exact: bit for bit
                assert got == mine.result
            assert got.logprobs[0] == pytest.approx(mine.result.logprobs[0], abs=1e-5)
    finally:
        alone.resident.free(release_cache=False)
        for r in runners:
            r.resident.free(release_cache=False)


def test_jobs_on_a_sessions_base_end_with_a_failed_pool_and_are_handed_back_when_it_stops(tmp_path: Path) -> None:
    """worker.training_api.jobs.JobsOnRuns: a round that fails ends every job with the failure and closes the pool
    (the sessions go on); a pool closed without a failure stops its jobs' leases beating (the reaper hands them on)."""
    from types import SimpleNamespace

    from worker.training_api.jobs import JobsOnRuns
    from worker.training_api.session import Seat

    class Jobs:
        ended: Exception | None = None
        abandoned = False

        def round(self, pool: Any) -> None:
            raise RuntimeError("the pool broke")

        def end_all(self, exc: Exception) -> None:
            self.ended = exc

        def abandon(self) -> None:
            self.abandoned = True

    on_runs = JobsOnRuns(WorkerSettings(state_dir=tmp_path, worker_token="t"), Seat(), "sessions:sess-1")
    failing = Jobs()
    on_runs.pool, on_runs.jobs = SimpleNamespace(tenants=1), failing  # type: ignore[assignment]
    on_runs.round()
    assert isinstance(failing.ended, RuntimeError) and on_runs.tenants == 0 and on_runs.jobs is None
    stopped = Jobs()
    on_runs.pool, on_runs.jobs = SimpleNamespace(tenants=1), stopped  # type: ignore[assignment]
    on_runs.close()
    assert stopped.abandoned and stopped.ended is None and on_runs.pool is None
