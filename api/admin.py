"""Admin CLI: ``python -m api.admin projects|keys|models …`` against the API's own database (DATABASE_URL) and
object store.

    python -m api.admin projects create NAME           # prints the new project's id
    python -m api.admin projects list
    python -m api.admin keys create --project ID [--name NAME]   # prints the key: shown this once only
    python -m api.admin keys list [--project ID]       # hints only, never keys
    python -m api.admin keys revoke KEY_ID
    python -m api.admin models add PATH_OR_URI [--id ID] [--hub-id ORG/NAME]   # prints the model's id
    python -m api.admin models list
    python -m api.admin models remove ID
    python -m api.admin secrets reencrypt              # project secrets under SECRETS_KEY's first key
    python -m api.admin billing show PROJECT           # its prices, monthly budget and month so far (JSON)
    python -m api.admin billing set PROJECT [--price KIND=PRICE]… [--inference-price P] [--discount D]
                                           [--clear-prices] [--monthly-budget B | --no-monthly-budget]
    python -m api.admin billing changes [--project ID] # the log of price and budget changes
    python -m api.admin inference add MODEL URL        # an operator's inference server; prints the replica's id
    python -m api.admin inference list                 # every replica: registered, started on demand, stopped
    python -m api.admin inference remove ID            # out of routing (a started one stops at its next report)

What a script wants (an id, a key) is the only thing on stdout; explanations go to stderr, so
``KEY=$(python -m api.admin keys create --project proj-…)`` works. The first key created ends open mode: from
then on every request needs a valid key (api.core.deps.current_project).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence

from pydantic import ValidationError
from sqlalchemy.exc import OperationalError, ProgrammingError
from sqlalchemy.orm import Session

from api.billing import service as billing
from api.billing.schemas import BillingUpdate
from api.core.errors import ServiceError
from api.core.settings import get_settings
from api.db.models import Project
from api.db.session import make_engine, make_sessionmaker
from api.inference import replicas as inference_replicas
from api.models import service as model_registry
from api.secrets import service as project_secrets
from api.tenants import service as tenants
from api.usage.schemas import PriceSheet


def _when(ts: int | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)) if ts else "-"


def _table(rows: list[list[str]], header: list[str]) -> None:
    """Tab-separated with a header: readable, and ``cut -f`` friendly."""
    for row in [header, *rows]:
        print("\t".join(row))


def _projects(session: Session, args: argparse.Namespace) -> None:
    if args.action == "create":
        row = tenants.create_project(session, args.name)
        print(row.id)
        print(f"created project {row.id} ({row.name})", file=sys.stderr)
    elif args.action == "set":
        row = tenants.set_share(
            session,
            args.project,
            weight=args.weight,
            max_priority=args.max_priority,
            max_running_jobs=args.max_running_jobs,
            no_running_limit=args.no_running_limit,
        )
        print(f"{row.id}: {_share(row)}", file=sys.stderr)
    else:
        rows = [
            [
                p.id,
                p.name,
                _when(p.created_at),
                f"{p.share_weight:g}",
                str(p.max_priority),
                str(p.max_running_jobs or "-"),
            ]
            for p in tenants.list_projects(session)
        ]
        _table(rows, ["id", "name", "created", "weight", "max_priority", "max_running_jobs"])


def _share(p: Project) -> str:
    limit = "default" if p.max_running_jobs is None else str(p.max_running_jobs)
    return f"weight {p.share_weight:g}, max priority {p.max_priority}, max running jobs {limit}"


def _keys(session: Session, args: argparse.Namespace) -> None:
    if args.action == "create":
        row, key = tenants.create_key(session, args.project, args.name)
        print(key)
        print(
            f"created {row.id} for {row.project_id} ({row.hint}). The key is shown only this once: store it now.",
            file=sys.stderr,
        )
    elif args.action == "revoke":
        row = tenants.revoke_key(session, args.key_id)
        print(f"revoked {row.id} ({row.hint}) of {row.project_id} at {_when(row.revoked_at)}", file=sys.stderr)
    else:
        rows = [
            [k.id, k.project_id, k.name or "-", k.hint, _when(k.created_at), _when(k.last_used_at), _when(k.revoked_at)]
            for k in tenants.list_keys(session, args.project)
        ]
        _table(rows, ["id", "project", "name", "hint", "created", "last_used", "revoked"])


def _gb(n: int | None) -> str:
    return f"{n / 1e9:.2f}" if n is not None else "-"


def _models(session: Session, args: argparse.Namespace) -> None:
    settings = get_settings()
    if args.action == "add":
        row = model_registry.register(session, settings.store(), args.source, model_id=args.id, hub_id=args.hub_id)
        print(row.id)
        print(
            f"registered {row.id}: {row.architecture}, {_gb(row.parameter_count)} B parameters, {row.dtype}, "
            f"context {row.context_length}, chat template {'yes' if row.chat_template else 'no'}, "
            f"{len(row.files)} files ({_gb(row.size)} GB) under {row.object_prefix}",
            file=sys.stderr,
        )
    elif args.action == "remove":
        row = model_registry.remove(session, settings.store(), args.id)
        print(f"removed {row.id}", file=sys.stderr)
    else:
        rows = [
            [
                e.id,
                e.row.architecture,
                _gb(e.row.parameter_count),
                e.row.dtype or "-",
                str(e.row.context_length),
                e.row.source,
                _when(e.row.created_at),
            ]
            if e.row is not None
            else [e.id, "-", "-", "-", "-", "catalog", "-"]
            for e in model_registry.available(session, settings).values()
        ]
        _table(rows, ["id", "architecture", "params_b", "dtype", "context", "source", "registered"])


def _inference(session: Session, args: argparse.Namespace) -> None:
    """The inference fleet's replicas in the database (api.inference.replicas); the API's routers pick a change up
    within seconds. The settings' replicas (INFERENCE_BASE_URL, INFERENCE_ENDPOINTS) are not rows: GET
    /v1/admin/inference/replicas lists them too, with each one's health."""
    if args.action == "add":
        row = inference_replicas.add(session, args.model, args.url)
        print(row.id)
        print(f"registered {row.url} as a replica of {row.base_model}", file=sys.stderr)
    elif args.action == "remove":
        row = inference_replicas.remove(session, args.id)
        print(f"{row.id} is {row.state}", file=sys.stderr)
    else:
        rows = [
            [r.id, r.base_model, r.origin, r.state, r.url or "-", r.worker_id or "-", _when(r.created_at)]
            for r in inference_replicas.recent(session)
        ]
        _table(rows, ["id", "base_model", "origin", "state", "url", "worker", "created"])


def _secrets(session: Session, args: argparse.Namespace) -> None:
    """After a new key was put first in SECRETS_KEY: every secret re-encrypted under it, so the old can go."""
    done, lost = project_secrets.reencrypt_all(session, get_settings())
    print(f"re-encrypted {done} secret(s) under the first key of SECRETS_KEY", file=sys.stderr)
    for name in lost:
        print(f"cannot decrypt {name} with any key of SECRETS_KEY: write it again (POST /v1/secrets)", file=sys.stderr)


def _billing(session: Session, args: argparse.Namespace) -> None:
    """A project's prices and monthly budget (api.billing.service), every change logged as ``admin-cli``."""
    settings = get_settings()
    if args.action == "changes":
        for c in billing.changes(session, args.project, 1000):
            print(json.dumps(c.model_dump(mode="json")))
        return
    if args.action == "set":
        sheet = None
        if args.price or args.inference_price is not None or args.discount is not None:
            prices = dict(_price(p) for p in args.price)
            sheet = PriceSheet(
                device_hour=prices, inference_per_million_tokens=args.inference_price, discount=args.discount or 0.0
            )
        body = BillingUpdate(
            prices=sheet,
            clear_prices=args.clear_prices,
            monthly_budget=args.monthly_budget,
            clear_monthly_budget=args.no_monthly_budget,
        )
        billing.update(session, settings, None, args.project, body, actor="admin-cli")
    billing.require_project(session, args.project)
    print(billing.billing(session, settings, args.project).model_dump_json(indent=2))


def _price(text: str) -> tuple[str, float]:
    kind, sep, price = text.rpartition("=")
    try:
        if not sep or not kind:
            raise ValueError
        return kind, float(price)
    except ValueError:
        raise tenants.TenantError(f"--price takes KIND=PRICE (e.g. H100=2.5), not {text!r}") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m api.admin", description="Projects (tenants), their API keys, and the base model registry."
    )
    groups = p.add_subparsers(dest="group", required=True)

    projects = groups.add_parser("projects", help="create and list projects").add_subparsers(
        dest="action", required=True
    )
    projects.add_parser("create", help="create a project; prints its id").add_argument("name")
    projects.add_parser("list", help="every project, with its share of the fleet")
    share = projects.add_parser(
        "set", help="a project's share of the fleet: fair-share weight, priority allowance, running-job limit"
    )
    share.add_argument("project", help="project id (proj-…)")
    share.add_argument("--weight", type=float, help="fair-share weight (default 1: twice the weight, twice the time)")
    share.add_argument("--max-priority", type=int, help="the highest priority its jobs may ask for (default 0)")
    limit = share.add_mutually_exclusive_group()
    limit.add_argument("--max-running-jobs", type=int, help="its jobs running at once (more wait queued)")
    limit.add_argument("--no-running-limit", action="store_true", help="back to MAX_RUNNING_JOBS_PER_PROJECT")

    keys = groups.add_parser("keys", help="create, list and revoke API keys").add_subparsers(
        dest="action", required=True
    )
    create = keys.add_parser("create", help="a new key for a project; prints the key (shown once)")
    create.add_argument("--project", required=True, help="project id (proj-…)")
    create.add_argument("--name", help="a label for the key, e.g. who or what uses it")
    keys.add_parser("list", help="keys with their hints (never the keys)").add_argument(
        "--project", help="only this one"
    )
    keys.add_parser("revoke", help="revoke a key (idempotent)").add_argument("key_id", help="key id (key-…)")
    models = groups.add_parser("models", help="the base model registry").add_subparsers(dest="action", required=True)
    add = models.add_parser("add", help="register a base model; prints its id")
    add.add_argument("source", help="an HF folder, s3://bucket/prefix/, or hf://org/name[@rev] (offline HF cache)")
    add.add_argument("--id", help="the model's id in the service (default: the folder's or hub id's name)")
    add.add_argument("--hub-id", help="org/name: what trained adapters name as their base model")
    models.add_parser("list", help="registered and catalog base models")
    models.add_parser("remove", help="remove a registered model").add_argument("id")
    secrets = groups.add_parser("secrets", help="project secrets at rest").add_subparsers(dest="action", required=True)
    secrets.add_parser("reencrypt", help="re-encrypt every secret under the first key of SECRETS_KEY")
    money = groups.add_parser("billing", help="prices and monthly budgets").add_subparsers(dest="action", required=True)
    money.add_parser("show", help="a project's prices, monthly budget and month so far").add_argument("project")
    set_ = money.add_parser("set", help="a project's own prices (replacing its sheet) or monthly budget")
    set_.add_argument("project", help="project id (proj-…)")
    set_.add_argument("--price", action="append", default=[], help="KIND=PRICE of a device-hour (repeat): H100=2.5")
    set_.add_argument("--inference-price", type=float, help="per million inference tokens")
    set_.add_argument("--discount", type=float, help="taken off every cost: 0.2 is 20 %% off, 1 a free project")
    set_.add_argument("--clear-prices", action="store_true", help="back to the service's prices")
    budget = set_.add_mutually_exclusive_group()
    budget.add_argument("--monthly-budget", type=float, help="its budget for a UTC month, in the price unit")
    budget.add_argument("--no-monthly-budget", action="store_true", help="no monthly budget")
    money.add_parser("changes", help="the log of price and budget changes (JSON lines)").add_argument(
        "--project", help="only this one"
    )
    fleet = groups.add_parser("inference", help="the inference replicas").add_subparsers(dest="action", required=True)
    add_replica = fleet.add_parser("add", help="register an inference server; prints the replica's id")
    add_replica.add_argument("model", help="the base model it serves")
    add_replica.add_argument("url", help="its OpenAI-compatible base, http://host:port/v1")
    fleet.add_parser("list", help="every replica, newest first")
    fleet.add_parser("remove", help="take a replica out of routing").add_argument("id", help="replica id (infr-…)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    engine = make_engine(get_settings().db_url)
    try:
        with make_sessionmaker(engine)() as session:
            groups = {
                "projects": _projects,
                "keys": _keys,
                "models": _models,
                "secrets": _secrets,
                "billing": _billing,
                "inference": _inference,
            }
            groups[args.group](session, args)
    except (tenants.TenantError, ServiceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ValidationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except (OperationalError, ProgrammingError) as exc:
        print(f"error: database not ready ({exc.orig}); run `alembic upgrade head` first", file=sys.stderr)
        return 2
    finally:
        engine.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
