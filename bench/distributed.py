"""Data-parallel GRPO (grpo_core.hardware.distributed): world size 1 vs 2 on this CPU, measured, and 8 / 16 GPUs
on paper.

    .venv/bin/python -m bench.distributed [--quick] [--model smollm2|tiny|ID] [--steps 4] [--rounds 2]
        [--precision auto|fp32|bf16] [--link-gbps 450] [--ib-gbps 50] [--gpu-step-s 1 5 20] ...

* One GRPO config (bench/dist_step.py: SmolLM2-135M-Instruct by default, B=4 prompts x G=8, <= 64 tokens, β=0.04,
  the merged engine, micro-batches of 8, the trainer's ``auto`` precision resolved once here for both worlds) at
  world size 1 (one process, all usable CPUs as threads) and 2 (torchrun, gloo, usable_cpus()//2 threads a rank),
  ``--rounds`` runs each in ABBA order, one warm-up step a run, medians over the rest. Each run also reports the
  share of the CPUs other processes took meanwhile: a run beside someone's tests is flagged, not trusted.
* Honestly, on 2 cores: both worlds have the same 2 cores, so world 2 adds no compute. It shows what the split
  costs (the (rollout, scores) all-gather, the gradient all-reduce, the small metric collectives, the work every
  rank repeats, the wait for the slower rank) against what two 1-thread processes gain over one 2-thread process.
  A ratio near 1 says the split is cheap, not that more devices would be fast.
* Volume per step, from the run: the gradient all-reduce bytes per rank (``all_reduce_sum_``'s return: LoRA numel
  x 8, fp64) and the (rollout, scores) share a rank sends (pickled size); gloo is also timed at those sizes in
  isolation (after a barrier, so no waiting on the slower rank is counted).
* On paper, for 8 GPUs (one node, NVLink) and 2 nodes x 8 (InfiniBand): T_N = p·S/N + (1-p)·S + comm(N), S the
  single-GPU step time, p the parallel share of the world-1 step (sampling + scoring + policy_update; the rest,
  post-gather batch assembly, AdamW, the engine's weight sync, metrics, is repeated by every rank), comm(N) =
  2(N-1)/N·grad/bw + (N-1)/N·batch/bw + latency x collectives (ring all-reduce and all-gather). Bandwidths and
  latencies are nominal datasheet figures (flags), not measurements; no GPU is measured here, so S/T_N is printed
  for a few S. It assumes an even split (a batch of >= N prompts; the trainer refuses fewer; the micro-batches are
  of equal size, as many on every rank, dealt in a snake order by length) and that p holds on a GPU
  (``--parallel-share`` takes a measured one). GPU decoding of a small batch is memory-bound, so 1/N of the rows
  does not sample N times faster: the projection is an upper bound.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path("bench/results")
MODELS = Path(".state/models")


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def others_cpu_s() -> float:
    """CPU seconds since boot of every process (/proc/stat: all but idle and iowait) less this process's and its
    waited-for descendants' (the ranks: torchrun waits for them): what other processes ran."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    own = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK") - own


def run_world(a: argparse.Namespace, size: int, out: Path) -> list[dict[str, Any]]:
    """One run of bench/dist_step.py at world ``size``; every rank's record, rank 0's with the share of the CPUs
    that other processes took meanwhile (a run beside someone's tests is not an honest measurement)."""
    args = ["-m", "bench.dist_step", "--model", str(a.model_path), "--out", str(out), "--steps", str(a.steps + 1)]
    args += ["--batch-size", str(a.batch_size), "--group-size", str(a.group_size), "--max-tokens", str(a.max_tokens)]
    args += ["--precision", a.precision, "--seed", str(a.seed)]
    cmd = [sys.executable, *args]
    if size > 1:
        from scripts.local_stack import free_port

        cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(size)]
        cmd += ["--master-port", str(free_port()), *args]
    env = os.environ | {"PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}
    t, others = time.perf_counter(), others_cpu_s()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"world {size} failed ({proc.returncode}):\n{proc.stdout[-3000:]}{proc.stderr[-6000:]}")
    records = [json.loads((out / f"rank-{r}.json").read_text()) for r in range(size)]
    records[0]["others_cpu_share"] = max(0.0, others_cpu_s() - others) / ((time.perf_counter() - t) * a.cpus)
    return records


def summarize(runs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """Medians over the measured steps (warm-up dropped) of every run of one world size, rank 0's figures joined to
    its step times. Collective counts come from steps before a run's last (whose row also holds the stop's
    any_rank and the checkpoint's gather). The parallel part of a step is sampling + scoring + policy_update; the
    rest of the wall time is what every rank repeats."""
    main, mid, sent = [], [], []
    waits: dict[int, list[float]] = {}  # rank -> in-run all-reduce seconds (mostly waiting for the slower rank)
    for run in runs:
        n = len(run[0]["steps"])
        for i, step in enumerate(run[0]["steps"][1:], start=2):
            row = run[0]["probe"][str(i)]
            par = row["sampling_s"] + row["scoring_s"] + row["policy_update_s"]
            main.append(row | {"wall": step["wall"], "phases": step["phases"], "tokens": step["completion_tokens"]})
            main[-1] |= {"parallel_s": par, "serial_s": step["wall"] - par, "share": par / step["wall"]}
            mid += [row] if i < n else []
        for rec in run:
            rows = [rec["probe"][str(i)] for i in range(2, n + 1)]
            waits.setdefault(rec["rank"], []).extend(r["grad_allreduce_s"] for r in rows)
        sent.append(sum(_med([float(r["probe"][str(i)].get("gather_bytes", 0)) for i in range(2, n + 1)]) for r in run))
    keys = ("policy_update_s", "post_gather_s", "parallel_s", "serial_s", "share", "grad_bytes", "collective_s")
    med: dict[str, Any] = {k: _med([p[k] for p in main]) for k in keys}
    med |= {k: _med([p.get(k, 0.0) for p in main]) for k in ("gather_s", "gather_bytes")}
    med["gather_bytes_all_ranks"] = _med(sent)
    med["grad_allreduce_s_by_rank"] = [_med(waits[r]) for r in sorted(waits)]
    mid = mid or main
    med["collective_kinds"] = mid[0]["collectives"]
    # latency-bearing collectives: an object gather is two (the sizes, then the padded bytes)
    med["collectives"] = _med(
        [sum(c * (2 if k.endswith("_object") else 1) for k, c in p["collectives"].items()) for p in mid]
    )
    iso = [run[0]["isolated"] for run in runs if run[0]["isolated"]]
    return {
        "wall_s": _med([p["wall"] for p in main]),
        "phases_s": {k: _med([p["phases"][k] for p in main]) for k in main[0]["phases"]},
        "tokens_per_s": _med([p["tokens"] / p["wall"] for p in main]),
        "walls": [round(p["wall"], 3) for p in main],
        "others_cpu_share": [run[0]["others_cpu_share"] for run in runs],
        "probe": med,
        "isolated": {k: _med([i[k] for i in iso]) for k in iso[0]} if iso else {},
        "threads": runs[0][0]["threads"],
        "execution": runs[0][0]["execution"],
        "rows": main[0]["rows"],
    }


def comm_s(n: int, grad_bytes: float, batch_bytes: float, bw_gbps: float, lat_us: float, calls: float) -> float:
    """Ring all-reduce of the gradient + ring all-gather of the batch + a latency per collective, in seconds."""
    bw = bw_gbps * 1e9
    return 2 * (n - 1) / n * grad_bytes / bw + (n - 1) / n * batch_bytes / bw + calls * lat_us * 1e-6


def project(a: argparse.Namespace, one: dict[str, Any], two: dict[str, Any]) -> dict[str, Any]:
    """The paper model's inputs and its speed-ups for 8 GPUs (NVLink) and 2 x 8 (InfiniBand)."""
    p = a.parallel_share if a.parallel_share is not None else one["probe"]["share"]
    grad = two["probe"]["grad_bytes"]
    per_row = two["probe"]["gather_bytes_all_ranks"] / two["rows"]
    batch = per_row * a.project_prompts * a.group_size
    calls = two["probe"]["collectives"]
    links = {"8 GPUs, NVLink": (8, a.link_gbps, a.latency_us), "2x8 GPUs, IB": (16, a.ib_gbps, a.ib_latency_us)}
    table: dict[str, Any] = {}
    for name, (n, bw, lat) in links.items():
        c = comm_s(n, grad, batch, bw, lat, calls)
        table[name] = {
            "n": n,
            "comm_s": c,
            "speedup": {str(s): s / (p * s / n + (1 - p) * s + c) for s in a.gpu_step_s},
        }
    return {
        "parallel_share": p,
        "grad_bytes": grad,
        "batch_bytes": batch,
        "bytes_per_row": per_row,
        "collectives_per_step": calls,
        "amdahl_ceiling": 1 / (1 - p) if p < 1 else float("inf"),
        "table": table,
    }


def report(a: argparse.Namespace, one: dict[str, Any], two: dict[str, Any], proj: dict[str, Any]) -> float:
    """Print the comparison and the projection; returns the world2/world1 ratio."""
    ex, pr, iso = one["execution"], two["probe"], two["isolated"]
    print(f"GRPO step, {a.model_name}, B={a.batch_size} x G={a.group_size}, <= {a.max_tokens} tokens, {a.device_name}")
    print(
        f"  precision {a.precision} ({a.precision_reason}), engine {ex.get('rollout_engine')}, micro-batch "
        f"{ex.get('micro_batch_size')}, {a.rounds} run(s) per world (ABBA), 1 warm-up + {a.steps} steps per run"
    )
    print(
        f"  {a.cpus} usable CPUs: world 1 = 1 process x {one['threads']} threads, world 2 = 2 ranks x "
        f"{two['threads']} thread(s): the same cores, so world 2 shows the split's cost, not a speed-up"
    )
    cols = ("step s", "sampling", "scoring", "training", "update", "post-gather", "rest", "tok/s")
    print(f"{'median':9s}" + "".join(f"{c:>12s}" for c in cols))
    for name, w in (("world 1", one), ("world 2", two)):
        ph, m = w["phases_s"], w["probe"]
        vals = (w["wall_s"], ph["sampling"], ph["scoring"], ph["training"], m["policy_update_s"], m["post_gather_s"])
        print(f"{name:9s}" + "".join(f"{v:12.4f}" for v in (*vals, m["serial_s"])) + f"{w['tokens_per_s']:12.1f}")
        others = " ".join(f"{x:.1%}" for x in w["others_cpu_share"])
        print(f"{'':9s}steps: {' '.join(f'{x:.2f}' for x in w['walls'])}; other processes' share of the CPUs: {others}")
    ratio, busy = two["wall_s"] / one["wall_s"], max(one["others_cpu_share"] + two["others_cpu_share"])
    if busy > 0.05:
        print(f"WARNING: other processes took up to {busy:.0%} of the CPUs during a run: not a clean measurement")
    print(
        f"ratio world2/world1 (median step): {ratio:.3f}; update = policy_update (its all-reduce included), rest = "
        "step - sampling - scoring - update (repeated by every rank); world 2's scoring includes the gather"
    )
    print(
        f"per step, per rank: gradient all-reduce {pr['grad_bytes'] / 2**20:.3f} MiB (fp64 LoRA gradient), "
        f"(rollout, scores) gather {pr['gather_bytes'] / 2**10:.1f} KiB sent, collectives {pr['collective_kinds']}"
    )
    by_rank = ", ".join(f"rank {r} {x * 1e3:.0f} ms" for r, x in enumerate(pr["grad_allreduce_s_by_rank"]))
    print(
        f"  gloo in the run, waits for the slower rank included: all-reduce {by_rank}; gather "
        f"{pr['gather_s'] * 1e3:.1f} ms; all collectives {pr['collective_s'] * 1e3:.0f} ms (rank 0)"
    )
    if iso:
        print(
            f"  gloo isolated (after a barrier): all-reduce {iso['grad_allreduce_s'] * 1e3:.2f} ms, gather "
            f"{iso['gather_s'] * 1e3:.2f} ms (its pickle round trip alone {iso['pickle_roundtrip_s'] * 1e3:.2f} ms)"
            f", 1-element all_reduce {iso['small_allreduce_s'] * 1e6:.0f} µs"
        )
        comm = iso["grad_allreduce_s"] + iso["gather_s"] + (pr["collectives"] - 3) * iso["small_allreduce_s"]
        lo, rest = one["wall_s"] + comm, one["probe"]["serial_s"]
        print(
            f"  same 2 cores, if 1 process got 2x from its 2nd thread: world 2 = world 1 + gloo {comm * 1e3:.0f} ms "
            f"(+ up to {rest:.2f} s: the rest at 1 thread) = {lo:.2f}..{lo + rest:.2f} s; measured "
            f"{two['wall_s']:.2f} s"
        )
    src = "--parallel-share" if a.parallel_share is not None else "measured on this CPU, world 1"
    print(
        f"PROJECTION, on paper (no GPU measured): p = {proj['parallel_share']:.3f} ({src}), so at most "
        f"{proj['amdahl_ceiling']:.1f}x on any N; S = the single-GPU step time"
    )
    print(
        f"  T_N = p·S/N + (1-p)·S + 2(N-1)/N·{proj['grad_bytes'] / 2**20:.3f} MiB/bw + (N-1)/N·"
        f"{proj['batch_bytes'] / 2**20:.2f} MiB/bw + {proj['collectives_per_step']:.0f} x latency (batch: "
        f"{a.project_prompts} prompts x G={a.group_size} x {proj['bytes_per_row']:.0f} B/row, measured)"
    )
    print(
        f"  nominal, not measured: NVLink {a.link_gbps:g} GB/s and {a.latency_us:g} µs, InfiniBand {a.ib_gbps:g} "
        f"GB/s and {a.ib_latency_us:g} µs per collective"
    )
    print(
        f"  {'speed-up S/T_N':18s}{'comm ms':>9s}" + "".join(f"{'S=' + format(x, 'g') + 's':>9s}" for x in a.gpu_step_s)
    )
    for name, row in proj["table"].items():
        print(f"  {name:18s}{row['comm_s'] * 1e3:9.3f}" + "".join(f"{v:8.2f}x" for v in row["speedup"].values()))
    return ratio


def resolve(a: argparse.Namespace, tmp: Path) -> None:
    """The model folder (the tiny one built in ``tmp``), its name, the CPU, the usable CPUs and the precision both
    worlds train in."""
    import torch

    from grpo_core.hardware.device import cpu_name, resolve_precision, usable_cpus

    if a.model == "tiny":
        from tests.tiny_model import build_tiny_model

        a.model_path = build_tiny_model(tmp)
    elif a.model in ("smollm2", "SmolLM2-135M-Instruct"):
        from grpo_core.models.catalog import prepare_smollm2

        a.model_path = prepare_smollm2(MODELS)
    else:
        from grpo_core.models.catalog import resolve_model

        a.model_path = resolve_model(MODELS, a.model)
    a.model_name = Path(a.model_path).resolve().name
    a.cpus, a.device_name = usable_cpus(), cpu_name()
    torch.set_num_threads(a.cpus)  # measured as world 1 measures it; world 2's ranks would each measure their own
    a.precision, a.precision_reason = resolve_precision(a.precision, torch.device("cpu"))


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 round of 2 measured steps per world")
    ap.add_argument("--model", default="smollm2", help="smollm2, tiny (a random 2-layer model), or a catalog id")
    ap.add_argument("--steps", type=int, default=4, help="measured steps per run, after one warm-up step")
    ap.add_argument("--rounds", type=int, default=2, help="runs per world, in ABBA order")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--group-size", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--link-gbps", type=float, default=450.0, help="GB/s per direction, NVLink 4 on H100 SXM")
    ap.add_argument("--latency-us", type=float, default=10.0, help="per collective, within an NVLink node")
    ap.add_argument("--ib-gbps", type=float, default=50.0, help="GB/s, a 400 Gb/s InfiniBand NIC per GPU")
    ap.add_argument("--ib-latency-us", type=float, default=25.0, help="per collective, across nodes")
    ap.add_argument("--gpu-step-s", type=float, nargs="+", default=[1.0, 5.0, 20.0], help="single-GPU step times")
    ap.add_argument("--project-prompts", type=int, default=32, help="prompts per step in the projection (>= N)")
    ap.add_argument("--parallel-share", type=float, default=None, help="p measured elsewhere (e.g. on a GPU)")
    a = ap.parse_args()
    if a.quick:
        a.steps, a.rounds = 2, 1
    return a


def main() -> None:
    a = parse_args()
    started = time.perf_counter()
    order = [s for i in range(a.rounds) for s in ((1, 2) if i % 2 == 0 else (2, 1))]
    runs: dict[int, list[list[dict[str, Any]]]] = {1: [], 2: []}
    with tempfile.TemporaryDirectory() as tmp:
        resolve(a, Path(tmp))
        for i, size in enumerate(order):
            runs[size].append(run_world(a, size, Path(tmp) / f"run-{i}"))
    one, two = summarize(runs[1]), summarize(runs[2])
    proj = project(a, one, two)
    ratio = report(a, one, two, proj)
    import torch

    result = {
        "config": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
        "versions": {"python": sys.version.split()[0], "torch": torch.__version__},
        "machine": {"cpu": a.device_name, "usable_cpus": a.cpus},
        "world1": one,
        "world2": two,
        "ratio_world2_over_world1": ratio,
        "projection": proj,
        "raw": runs,
        "wall_s": time.perf_counter() - started,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"distributed-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path} ({result['wall_s']:.0f}s)")


if __name__ == "__main__":
    main()
