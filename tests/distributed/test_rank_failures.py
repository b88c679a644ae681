"""The cause of a multi-process job's failure, with real processes on gloo: a rank's own error on another node
reaches the node that reports (worker.rank.FailureExchange), where it wins over the lost peer it caused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.local_stack import free_port
from tests.helpers import claim, rank_spec
from worker.failures import PEER_LOST, RankFailed
from worker.launch import RankFailure, Torchrun

ROOT = Path(__file__).resolve().parents[2]


def test_another_nodes_own_failure_is_the_jobs_not_a_lost_rank(tmp_path: Path) -> None:
    specs = []
    for node in (0, 1):  # one folder per "node": rank 1's failure file never lands in node 0's folder
        spec = rank_spec(claim(), tmp_path / f"n{node}", node)
        spec.failures.mkdir(parents=True)
        spec.pids.mkdir(parents=True)
        (spec.pids / f"rank-{node}").write_text("999999")
        path = tmp_path / f"spec{node}.json"
        path.write_text(spec.model_dump_json())
        specs.append((spec, path))
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2", f"--master-port={free_port()}"]
    cmd += ["-m", "tests.failure_driver", str(specs[0][1]), str(specs[1][1])]
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    node0 = specs[0][0]
    files = sorted(p.name for p in node0.failures.iterdir())
    assert files == ["rank-0.json", "rank-1.json"], (files, proc.stderr[-3000:])
    own = RankFailure.model_validate_json((node0.failures / "rank-0.json").read_text())
    assert own.failure.code == PEER_LOST
    launcher = Torchrun(node0, ("127.0.0.1", 1), rendezvous_timeout=60)
    launcher.proc = subprocess.Popen(["sh", "-c", "exit 1"])
    launcher.proc.wait()
    with pytest.raises(RankFailed) as info:
        launcher.outcome()
    assert info.value.rank == 1 and info.value.failure.code == "out_of_memory"
    assert "out of memory on cuda:1 in the update of step 2" in info.value.failure.message
