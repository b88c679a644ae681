"""The launcher's side of a multi-process job without processes: the torchrun command, and which failure a
torchrun that exited non-zero reports (worker.launch)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from runtime import internal as api
from runtime.internal import Refusal
from tests.helpers import claim, rank_spec
from worker.client import StaleLease
from worker.failures import PEER_LOST, Failure, RankFailed, RanksLost
from worker.launch import RankFailure, RankResult, Torchrun

CLAIM = claim(epoch=3, total_steps=4, object_prefix="p/", resources=api.Resources(devices=2, nodes=3))


def _exited(tmp_path: Path, code: int, node_rank: int = 0) -> Torchrun:
    spec = rank_spec(CLAIM, tmp_path, node_rank)
    run = Torchrun(spec, ("10.0.0.5", 29511), rendezvous_timeout=120)
    spec.failures.mkdir(parents=True, exist_ok=True)
    spec.pids.mkdir(parents=True, exist_ok=True)
    run.proc = subprocess.Popen(["sh", "-c", f"exit {code}"])
    run.proc.wait()
    return run


def _fail(run: Torchrun, rank: int, at: float, code: str, message: str = "m") -> None:
    record = RankFailure(rank=rank, at=at, failure=Failure(code=code, message=message))
    (run.spec.failures / f"rank-{rank}.json").write_text(record.model_dump_json())


def test_the_command_is_torchruns_static_rendezvous_on_the_published_endpoint(tmp_path: Path) -> None:
    cmd = _exited(tmp_path, 0, node_rank=2).command()
    assert cmd[1:3] == ["-m", "torch.distributed.run"]
    for flag in ("--nnodes=3", "--node-rank=2", "--nproc-per-node=2", "--master-addr=10.0.0.5", "--master-port=29511"):
        assert flag in cmd
    assert "--max-restarts=0" in cmd and "--rdzv-conf=timeout=120" in cmd and "--rdzv-id=ftjob-x-e3" in cmd
    assert cmd[-3:] == ["-m", "worker.rank", str(tmp_path / "spec.json")]


def test_a_clean_exit_gives_rank_0s_result_or_none_on_another_node(tmp_path: Path) -> None:
    run = _exited(tmp_path, 0)
    assert run.outcome() is None
    result = RankResult(steps_done=4, total_steps=4, stopped=False, trained_tokens=99)
    run.spec.result_file.write_text(result.model_dump_json())
    assert run.outcome() == result


def test_the_earliest_own_failure_is_the_cause_and_lost_peers_never_are(tmp_path: Path) -> None:
    run = _exited(tmp_path, 1)
    _fail(run, 0, at=10.0, code=PEER_LOST, message="all_reduce failed: another rank of the job is gone")
    _fail(run, 3, at=12.0, code="internal_error", message="later")
    _fail(run, 1, at=11.0, code="out_of_memory", message="out of memory on cuda:1 in the update of step 2")
    with pytest.raises(RankFailed) as info:
        run.outcome()
    assert info.value.rank == 1 and info.value.failure.code == "out_of_memory"


def test_a_torn_failure_record_does_not_hide_the_others(tmp_path: Path) -> None:
    """A rank killed while writing a record leaves a torn file: it is skipped, and the other rank's own failure is
    still the cause (a parse error here used to fail the job as internal_error, the cause lost)."""
    run = _exited(tmp_path, 1)
    _fail(run, 1, at=11.0, code="out_of_memory", message="out of memory on cuda:1")
    (run.spec.failures / "rank-0.json").write_text('{"rank": 0, "at": 10.0, "fail')
    with pytest.raises(RankFailed) as info:
        run.outcome()
    assert info.value.rank == 1 and info.value.failure.code == "out_of_memory"


def test_failure_records_are_written_whole_or_not_at_all(tmp_path: Path) -> None:
    from worker.rank import _write_atomic

    target = tmp_path / "rank-1.json"
    _write_atomic(target, "first")
    _write_atomic(target, "second")
    assert target.read_text() == "second" and [p.name for p in tmp_path.iterdir()] == ["rank-1.json"]


def test_ranks_that_died_without_an_error_of_their_own_are_an_infrastructure_loss(tmp_path: Path) -> None:
    run = _exited(tmp_path, 1)
    (run.spec.pids / "rank-1").write_text("999999")  # the ranks had started
    with pytest.raises(RanksLost, match="died without an error of its own"):
        run.outcome()  # a SIGKILLed rank writes nothing
    _fail(run, 0, at=1.0, code=PEER_LOST)
    with pytest.raises(RanksLost):
        run.outcome()


def test_nodes_that_never_joined_are_said_as_such(tmp_path: Path) -> None:
    run = _exited(tmp_path, 1)  # no rank started: torchrun's rendezvous timed out
    with pytest.raises(
        RanksLost, match=r"other 2 node\(s\) did not join its rendezvous at 10.0.0.5:29511 within 120 s"
    ):
        run.outcome()


def test_rank_0_losing_the_lease_stops_the_launcher_quietly(tmp_path: Path) -> None:
    run = _exited(tmp_path, 1)
    _fail(run, 0, at=1.0, code=Refusal.stale_lease, message="lease epoch 3 is stale")
    with pytest.raises(StaleLease):
        run.outcome()


def test_a_stop_request_is_a_file_rank_0_reads(tmp_path: Path) -> None:
    from worker.rank import RankLink
    from worker.settings import WorkerSettings

    run = _exited(tmp_path, 0)
    link = RankLink(run.spec, WorkerSettings(state_dir=tmp_path, worker_token="t"))
    assert not link.should_stop()
    run.request_stop("pause")
    assert link.should_stop() and link.stop_reason == "pause"
    link.client.close()
