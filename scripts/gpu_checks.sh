#!/usr/bin/env bash
# The GPU checks: tests/gpu, then the GPU benches (bench.sampler, bench.grpo_vs_trl, bench.update_ab: the update's
# paths side by side, captured against eager), with their logs and results
# JSON in bench/results/ (or $OUT when it is set). `make test-gpu` runs this with the venv's python; on a GPU
# machine without network it runs as it is, with the machine's own python3 and torch and the packages
# scripts/gpu_wheels.py carried there (docs/guides/gpu.md, "A GPU machine without network"):
#
#   bash scripts/gpu_checks.sh [--install /tmp/gpu-parts] [--real-models qwen2.5-0.5b,...] [--only tests|benches|pool]
#                              [--budget SECONDS] [--real-args "--trl-vllm --prompts 8 --max-tokens 1024"]
#
# --only pool: issue 45's bench alone, eight 0.5B-shape jobs pooled on the GPU (their rollouts decoded together)
# against the same eight one after the other (bench.pool).
# --real-args: more arguments for `bench.real_models run` (issue 44's run: TRL with and without its vLLM colocate
# mode, at the bench's shape and at 8 prompts x 8 x 1024 tokens).
# --install PARTS: first check and install the parts in PARTS into PARTS/site (skipped when already installed).
# GPU_PYTHON: the interpreter (default python3). GPU_TESTS: what pytest runs (default tests/gpu; e.g.
# "tests/gpu/test_gpu_vllm.py -k lora" to spread the suite over several short runs). --budget: a lent machine's
# call has a hard limit that loses a killed pipeline's output, so each piece runs under `timeout` for what is left
# of SECONDS and a piece past it is skipped with a line that says so; each piece's log and results are written as
# they come (tests/gpu/conftest.py records every outcome and traceback as it happens).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${GPU_PYTHON:-python3}
PARTS="" REAL="" ONLY="" BUDGET="" REAL_ARGS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --install) PARTS=$2; shift 2 ;;
    --real-models) REAL=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --real-args) REAL_ARGS=$2; shift 2 ;;
    *) echo "gpu_checks: unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
RESULTS=${OUT:-bench/results}
mkdir -p "$RESULTS" bench/results
if [ -n "$PARTS" ]; then
  SITE="$PARTS/site"
  [ -d "$SITE" ] || "$PY" -m scripts.gpu_wheels install --parts "$PARTS" --target "$SITE"
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE/bin:$PATH"
fi
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
"$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else \
  'the GPU checks need a GPU and a CUDA build of torch: torch.cuda.is_available() is False here')"
stamp=$(date +%Y%m%d-%H%M%S)
deadline=$(( $(date +%s) + ${BUDGET:-1000000} ))
status=0
piece() {  # piece LOG CMD...: CMD under the time left, its output in LOG as it comes
  local log=$1 left=$(( deadline - $(date +%s) ))
  shift
  if [ "$left" -lt 10 ]; then
    echo "gpu_checks: no time left for: $*" | tee -a "$log"
    status=1
    return
  fi
  timeout "$left" "$@" 2>&1 | tee "$log" || { echo "gpu_checks: exit ${PIPESTATUS[0]}: $*"; status=1; }
}
if [ "$ONLY" = pool ]; then
  piece "$RESULTS/pool-cuda-$stamp.log" "$PY" -m bench.pool --model qwen2.5-0.5b --jobs 8 --device cuda
  exit $status
fi
if [ "$ONLY" != benches ]; then
  # shellcheck disable=SC2086  # GPU_TESTS is a list of pytest arguments
  GPU_RESULTS="$RESULTS/gpu-tests-$stamp.json" piece "$RESULTS/gpu-tests-$stamp.log" \
    "$PY" -m pytest -q -p no:cacheprovider -rs ${GPU_TESTS:-tests/gpu}
fi
if [ "$ONLY" != tests ]; then
  piece "$RESULTS/sampler-cuda-$stamp.log" "$PY" -m bench.sampler --device cuda --json "$RESULTS/sampler-cuda-$stamp.json"
  piece "$RESULTS/grpo-vs-trl-cuda-$stamp.log" "$PY" -m bench.grpo_vs_trl --device cuda --quick
  piece "$RESULTS/update-ab-cuda-$stamp.log" "$PY" -m bench.update_ab --device cuda --models smollm2,qwen2.5-0.5b
  if [ -n "$REAL" ]; then
    # shellcheck disable=SC2086  # REAL_ARGS is a list of arguments
    piece "$RESULTS/real-models-$stamp.log" "$PY" -m bench.real_models run --models "$REAL" $REAL_ARGS
  fi
  [ "$RESULTS" = bench/results ] || cp bench/results/*.json "$RESULTS"/ 2>/dev/null || true
fi
exit $status
