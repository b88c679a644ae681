"""``/internal/evals``: what the worker running an eval run calls (token-authenticated, not in the public spec):
claim the run, post its graded items in batches, finish it. Each call is fenced by the run's claim
(api.evals.leases; the contract: runtime.eval_contract)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.core.deps import SessionDep, SettingsDep, require_worker
from api.evals import leases
from runtime import eval_contract as contract

router = APIRouter(
    prefix=contract.PREFIX, tags=["internal"], dependencies=[Depends(require_worker)], include_in_schema=False
)


@router.post(contract.CLAIM)
def claim_run(
    run_id: str, body: contract.EvalClaimRequest, session: SessionDep, settings: SettingsDep
) -> contract.EvalClaim:
    return leases.claim(session, settings, run_id, body.claim_id)


@router.post(contract.ITEMS)
def post_items(run_id: str, body: contract.EvalItemsRequest, session: SessionDep) -> contract.EvalItemsResponse:
    return contract.EvalItemsResponse(added=leases.record_items(session, run_id, body))


@router.post(contract.FINISH)
def finish_run(run_id: str, body: contract.EvalFinishRequest, session: SessionDep) -> contract.EvalFinishResponse:
    return contract.EvalFinishResponse(status=leases.finish(session, run_id, body).status)
