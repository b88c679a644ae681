"""Which job runs next: the API decides, a worker asks.

A worker with a free slot asks to "claim the next job I can run" (``claim_next``: its devices and nodes); the
Celery message that woke it is only a doorbell. Among the claimable jobs — queued past any retry backoff, or
running under an expired lease (a lost worker), with attempts left, fitting the worker — the scheduler takes:

1. the highest ``priority`` (a job asks for one up to its project's ``max_priority``, set by an admin);
2. then fair share: the project with the least recent device-time for its weight,
   ``share(p) = Σ_r device_seconds_r · 2^(−(t − last_seen_r) / H) / weight_p`` over the project's usage records
   (api.db.models.UsageRecord; H = ``fair_share_half_life_seconds``), as Slurm's fair-share factor decays usage
   (twice the weight, twice the device-time before the others go first);
3. then age (created first, then id).

A project at its running limit (``max_running_jobs``, or the service's ``max_running_jobs_per_project``) is
passed over: its jobs wait ``queued`` and say why (``waiting``), and they are rung again when one of its jobs
ends. So is a project over its monthly budget (api.usage.budgets): its jobs wait, saying which budget and by how
much, until the budget is raised (the reaper rings unclaimed jobs again) or the month ends.
The choice and the take happen under one fleet-wide lock (api.db.locks) that is held until the claim
commits, and the take is the claim's guarded UPDATE (api.jobs.claims.take): two workers never take the same job,
a project's limit holds exactly, and the fencing epoch works as for any claim.

Preemption (``preempt``, a reaper rule): a job that waited ``preemption_grace_seconds`` unclaimed though nothing
holds it back has no free worker; the lowest-priority preemptible running job below its priority is asked to
stop at its next step boundary (``stop: preempt``). Its worker checkpoints and hands it back to the queue (the
shutdown hand-back path: no attempt used); the finish rings the doorbell, and the waiting job, higher in the order,
is next for whichever worker answers.
The preempted job resumes exactly from that checkpoint when a worker is free. An event on both jobs says why.
"""

from __future__ import annotations

import logging
import math
import threading
import weakref
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from time import monotonic  # a name of this module: a test moves its snapshots' clock alone

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.orm import Session

from api.core.settings import ApiSettings
from api.db.locks import hold_project_lock
from api.db.models import ACTIVE, Job, JobStatus, Project, UsageRecord, now
from api.db.session import rows_changed
from api.jobs.events import add_event
from api.jobs.schemas import Waiting
from api.usage import budgets

log = logging.getLogger(__name__)
FLEET = "fleet"  # the one lock every scheduling decision takes (api.db.locks; not a project id)


@dataclass(frozen=True)
class Candidate:
    """A job the scheduler may hand out: what the order and the worker's fit need."""

    id: str
    project_id: str
    priority: int
    created_at: int
    devices: int
    nodes: int
    queued: bool  # False: running under an expired lease (its worker was lost)
    not_before: int | None = None  # a retry backoff still to pass (such a job waits, it is not claimable)
    queued_since: int = 0  # when it last became queued (its creation for older rows)


@dataclass
class Fleet:
    """What one decision reads: the candidates, what each project runs, its limit and its share."""

    candidates: list[Candidate]
    running: dict[str, int] = field(default_factory=dict)
    limits: dict[str, int | None] = field(default_factory=dict)
    share: dict[str, float] = field(default_factory=dict)
    held: dict[str, str] = field(default_factory=dict)  # projects over their monthly budget: why their jobs wait

    def at_limit(self, project_id: str) -> int | None:
        """The project's running limit when it is reached (its jobs wait), else None."""
        limit = self.limits.get(project_id)
        return limit if limit is not None and self.running.get(project_id, 0) >= limit else None

    def order(self, t: int) -> list[Candidate]:
        """Claimable candidates in the order they are handed out (see the module doc); none of a project at its
        limit or over its monthly budget, none inside a backoff."""
        ready = [
            c
            for c in self.candidates
            if self.at_limit(c.project_id) is None and c.project_id not in self.held and (c.not_before or 0) <= t
        ]
        return sorted(ready, key=lambda c: (-c.priority, self.share.get(c.project_id, 0.0), c.created_at, c.id))


def decayed(device_seconds: float, last_seen_at: float, t: int, half_life: int) -> float:
    """Device-seconds seen ``t - last_seen_at`` seconds ago, halved every ``half_life`` seconds."""
    return device_seconds * math.exp2(-max(0, t - last_seen_at) / half_life)


def waiting_or_lost(t: int) -> ColumnElement[bool]:
    """Jobs that want a worker at ``t``: queued, or running under an expired lease (its worker was lost), with
    attempts left (a retry backoff may still hold them back: ``claimable``)."""
    lease_gone = or_(Job.lease_expires_at.is_(None), Job.lease_expires_at < t)
    return and_(
        or_(Job.status == JobStatus.queued, and_(Job.status == JobStatus.running, lease_gone)),
        Job.attempts < Job.max_attempts,
    )


def claimable(t: int) -> ColumnElement[bool]:
    """What a claim may take at ``t`` (the guard of its UPDATE, api.jobs.claims.take): wanting a worker, past any
    retry backoff. Project limits and the worker's fit are the scheduler's, under the fleet lock."""
    return and_(waiting_or_lost(t), or_(Job.not_before.is_(None), Job.not_before <= t))


def read_fleet(session: Session, settings: ApiSettings, t: int) -> Fleet:
    """The scheduler's snapshot. Every claimable or waiting job, the live running jobs per project, each
    project's limit and decayed share (usage older than eight half-lives is below 0.4 % and not read)."""
    rows = session.execute(
        select(
            Job.id,
            Job.project_id,
            Job.priority,
            Job.created_at,
            Job.resources,
            Job.status,
            Job.not_before,
            Job.queued_at,
        ).where(waiting_or_lost(t))
    ).all()
    candidates = [
        Candidate(
            id=r.id,
            project_id=r.project_id,
            priority=r.priority,
            created_at=r.created_at,
            devices=int((r.resources or {}).get("devices", 1)),
            nodes=int((r.resources or {}).get("nodes", 1)),
            queued=r.status == JobStatus.queued,
            not_before=r.not_before,
            queued_since=r.queued_at or r.created_at,
        )
        for r in rows
    ]
    running: dict[str, int] = dict(
        session.execute(
            select(Job.project_id, func.count())
            .where(Job.status.in_(list(ACTIVE)), Job.lease_expires_at >= t)
            .group_by(Job.project_id)
        ).all()
    )
    projects = {c.project_id for c in candidates} | set(running)
    limits: dict[str, int | None] = {p: settings.max_running_jobs_per_project for p in projects}
    weights: dict[str, float] = dict.fromkeys(projects, 1.0)
    for pid, weight, limit in session.execute(
        select(Project.id, Project.share_weight, Project.max_running_jobs).where(Project.id.in_(projects))
    ):
        weights[pid] = weight if weight and weight > 0 else 1.0
        if limit is not None:
            limits[pid] = limit
    half_life = settings.fair_share_half_life_seconds
    used: dict[str, float] = defaultdict(float)
    for pid, seconds, seen in session.execute(
        select(UsageRecord.project_id, UsageRecord.device_seconds, UsageRecord.last_seen_at).where(
            UsageRecord.project_id.in_(projects), UsageRecord.last_seen_at >= t - 8 * half_life
        )
    ):
        used[pid] += decayed(seconds or 0.0, seen, t, half_life)
    share = {p: used[p] / weights[p] for p in projects}
    held = budgets.over_budget(session, settings, {c.project_id for c in candidates}, t)
    return Fleet(candidates, running, limits, share, held)


def fits(candidate: Candidate, devices: int | None, nodes: int | None) -> bool:
    """Whether a worker offering ``devices`` per node and ``nodes`` (None: any) can run the job."""
    return (devices is None or candidate.devices <= devices) and (nodes is None or candidate.nodes <= nodes)


def lock_fleet(session: Session) -> None:
    """Take the fleet lock, held until the session's transaction ends: one scheduling decision at a time."""
    hold_project_lock(session, "claim", FLEET)


def next_jobs(session: Session, settings: ApiSettings, devices: int | None, nodes: int | None) -> list[str]:
    """The claimable jobs this worker fits, best first; the caller holds the fleet lock (``lock_fleet``) and takes
    the first it can (api.jobs.claims.claim_next)."""
    t = now()
    return [c.id for c in read_fleet(session, settings, t).order(t) if fits(c, devices, nodes)]


SNAPSHOT_MAX_AGE = 2.0  # seconds a process's job polls share one snapshot for their waiting reasons


@dataclass(frozen=True)
class _Snapshot:
    """One read of the fleet with the order it gives, for ``waiting``."""

    taken: float  # monotonic() when read
    fleet: Fleet
    ahead: dict[str, int]  # job id -> how many claimable jobs come before it
    ids: frozenset[str]  # every candidate's, a backoff's included: a queued job not among them is newer


# per database, keyed by its connection pool: the API's read sessions and its writing ones are two engines (an
# AUTOCOMMIT one from execution_options) over one pool; the tests, and a process with two apps, read several
_snapshots: weakref.WeakKeyDictionary[object, _Snapshot] = weakref.WeakKeyDictionary()
_snapshots_lock = threading.Lock()


def forget(session: Session) -> None:
    """Drop this database's cached snapshot: this process just changed what runs there (a claim, a finish), so its
    next poll reads the fleet again instead of showing a place in line that is already gone."""
    with _snapshots_lock:
        _snapshots.pop(_database(session), None)


def _database(session: Session) -> object:
    return session.get_bind().engine.pool


def _snapshot(session: Session, settings: ApiSettings, wanted: set[str]) -> _Snapshot:
    """The fleet as read at most ``SNAPSHOT_MAX_AGE`` seconds ago by this process, unless a job of ``wanted`` is
    not in it (created since): a poll of a queued job is then one query, not the scheduler's four, however many
    clients poll (read_fleet reads every waiting job and eight half-lives of usage)."""
    db = _database(session)
    with _snapshots_lock:
        cached = _snapshots.get(db)
    fresh = cached is not None and monotonic() - cached.taken < SNAPSHOT_MAX_AGE
    if cached is not None and fresh and wanted <= cached.ids:
        return cached
    t = now()
    fleet = read_fleet(session, settings, t)
    ahead = {c.id: i for i, c in enumerate(fleet.order(t))}
    snap = _Snapshot(monotonic(), fleet, ahead, frozenset(c.id for c in fleet.candidates))
    with _snapshots_lock:
        _snapshots[db] = snap
    return snap


def waiting(session: Session, settings: ApiSettings, jobs: Sequence[Job]) -> dict[str, Waiting]:
    """The reason each queued job of ``jobs`` waits. Positions count every project's jobs ahead (never which
    ones): an estimate, since a job's project share grows as its earlier jobs run, and read from a snapshot up to
    ``SNAPSHOT_MAX_AGE`` seconds old (another API process's claims show after that)."""
    queued = [j for j in jobs if j.status == JobStatus.queued]
    if not queued:
        return {}
    t = now()
    snap = _snapshot(session, settings, {j.id for j in queued if j.attempts < j.max_attempts})
    fleet, ahead = snap.fleet, snap.ahead
    out: dict[str, Waiting] = {}
    for job in queued:
        limit = fleet.at_limit(job.project_id)
        if job.not_before and job.not_before > t:
            out[job.id] = Waiting(reason=f"waiting: retrying in {job.not_before - t} s after a failed attempt")
        elif job.attempts >= job.max_attempts:
            out[job.id] = Waiting(reason="waiting: no attempts left")
        elif job.project_id in fleet.held:
            out[job.id] = Waiting(reason=fleet.held[job.project_id])
        elif limit is not None:
            plural = "s" if limit != 1 else ""
            out[job.id] = Waiting(reason=f"waiting: project at its limit of {limit} running job{plural}")
        elif job.id in ahead:
            n = ahead[job.id]
            if n == 0:
                out[job.id] = Waiting(reason="waiting: next to start when a worker is free", position=0)
            else:
                out[job.id] = Waiting(reason=f"waiting: {n} job{'s' if n != 1 else ''} ahead", position=n)
    return out


def any_claimable(session: Session) -> bool:
    """Whether a job is claimable now, as one EXISTS: a claim and a finish ring once more when one is, so free
    workers take the queue one after another. Project limits are not read here: a doorbell that finds only a
    project at its limit is dropped by the worker that answers it, which costs one claim request."""
    return bool(session.scalar(select(select(Job.id).where(claimable(now())).exists())))


def preempt(session: Session, settings: ApiSettings, fleet: Fleet, t: int) -> list[str]:
    """Ask preemptible running jobs to make way for higher-priority ones that waited past the grace period with
    nothing holding them back (so no worker is free). ``fleet`` is read at ``t`` under the fleet lock, which the
    caller (the reaper's pass) holds until it commits: one decision at a time. Returns the jobs asked."""
    lowest = min_running_priority(session, t)
    since = t - settings.preemption_grace_seconds
    waiting_long = [c for c in fleet.order(t) if c.queued and c.priority > lowest and c.queued_since <= since]
    if not waiting_long:
        return []
    served = set(
        session.scalars(  # a job asked that has since lost its worker frees nothing: not counted
            select(Job.preempted_by).where(
                Job.status.in_(list(ACTIVE)), Job.preempted_by.is_not(None), Job.lease_expires_at >= t
            )
        )
    )
    asked: list[str] = []
    for want in waiting_long:
        if want.id in served:
            continue  # a job already checkpoints for it
        victim = _victim(session, want, t)
        if victim is None:
            continue
        taken = rows_changed(
            session,
            update(Job)
            .where(Job.id == victim.id, Job.status == JobStatus.running, Job.preempted_by.is_(None))
            .values(preempted_by=want.id),
        )
        if taken != 1:
            continue
        add_event(
            session,
            victim.id,
            f"Preempted by {want.id} (priority {want.priority} > {victim.priority}): checkpointing at the next step "
            "boundary, then back in the queue to resume from it",
            level="warn",
        )
        add_event(
            session,
            want.id,
            f"No worker free: preempting {victim.id} (priority {victim.priority}, preemptible) to start this job",
        )
        served.add(want.id)
        asked.append(victim.id)
    return asked


def min_running_priority(session: Session, t: int) -> int:
    """The lowest priority among preemptible running jobs (a large number when there are none)."""
    lowest = session.scalar(
        select(func.min(Job.priority)).where(
            Job.status == JobStatus.running,
            Job.preemptible.is_(True),
            Job.preempted_by.is_(None),
            Job.lease_expires_at >= t,
        )
    )
    return 2**31 if lowest is None else int(lowest)


def _victim(session: Session, want: Candidate, t: int) -> Job | None:
    """The running job to preempt for ``want``: preemptible, lower priority, not already asked, using at least
    the devices ``want`` needs; the lowest priority first, then the one that started last (least work since its
    last checkpoint is the best guess without reading them)."""
    rows: Iterable[Job] = session.scalars(
        select(Job)
        .where(
            Job.status == JobStatus.running,
            Job.preemptible.is_(True),
            Job.preempted_by.is_(None),
            Job.priority < want.priority,
            Job.lease_expires_at >= t,
        )
        .order_by(Job.priority, Job.started_at.desc())
    )
    for job in rows:
        res = job.resources or {}
        if int(res.get("devices", 1)) >= want.devices and int(res.get("nodes", 1)) >= want.nodes:
            return job
    return None
