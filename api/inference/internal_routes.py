"""``/internal/inference/replicas``: what a worker serving a model on demand calls (token-authenticated, not in
the public spec): claim the requested replica, report it starting, ready, and stopped (api.inference.replicas; the
contract: runtime.serving_contract)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from api.core.deps import SessionDep, SettingsDep, require_worker
from api.inference import replicas
from runtime import serving_contract as contract

router = APIRouter(
    prefix=contract.PREFIX, tags=["internal"], dependencies=[Depends(require_worker)], include_in_schema=False
)


@router.post(contract.CLAIM)
def claim_replica(
    replica_id: str, body: contract.ServeClaimRequest, session: SessionDep, settings: SettingsDep
) -> contract.ServeClaim:
    return replicas.claim(session, settings, replica_id, body)


@router.post(contract.REPORT)
def report_replica(
    replica_id: str, body: contract.ServeReport, session: SessionDep, settings: SettingsDep
) -> contract.ServeAnswer:
    return replicas.report(session, settings, replica_id, body)
