"""Users and bearer tokens: a token is shown once at creation; the database keeps only its SHA-256.

A token is 32 random bytes (``secrets``), URL-safe, prefixed ``gw_`` so it is recognisable in a leaked file.
Looking one up hashes the presented token and finds the hash (unique index): O(log users).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.engine import Engine

from gpuweave.errors import InputError
from gpuweave.service.db import reading, tokens, users, writing

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
TOKEN_PREFIX = "gw_"


@dataclass(frozen=True, slots=True)
class User:
    id: int
    name: str
    admin: bool
    max_running_gpus: int | None
    max_queued_jobs: int | None


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_token(
    engine: Engine,
    name: str,
    *,
    admin: bool = False,
    max_running_gpus: int | None = None,
    max_queued_jobs: int | None = None,
    slurm_account: str | None = None,
    slurm_qos: str | None = None,
) -> str:
    """A new token for user ``name`` (created if new; ``admin``, quotas and the Slurm account and QoS given here are
    set on the user)."""
    if not USER_NAME.match(name):
        raise InputError(f"user name {name!r} must be 1-64 letters, digits, '.', '_' or '-'", field="NAME")
    for label, text in (("slurm-account", slurm_account), ("slurm-qos", slurm_qos)):
        if text is not None and not USER_NAME.match(text):
            raise InputError(f"{text!r} must be 1-64 letters, digits, '.', '_' or '-' (a Slurm name)", field=label)
    slurm = {k: v for k, v in (("slurm_account", slurm_account), ("slurm_qos", slurm_qos)) if v is not None}
    for label, value in (("max-running-gpus", max_running_gpus), ("max-queued-jobs", max_queued_jobs)):
        if value is not None and value < 1:
            raise InputError(f"must be >= 1, got {value}", field=label)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = time.time()
    with writing(engine) as conn:
        row = conn.execute(select(users.c.id).where(users.c.name == name)).first()
        if row is None:
            new = conn.execute(
                insert(users).values(
                    name=name,
                    admin=admin,
                    max_running_gpus=max_running_gpus,
                    max_queued_jobs=max_queued_jobs,
                    created_at=now,
                    **slurm,
                )
            ).inserted_primary_key
            assert new is not None  # a one-row INSERT without RETURNING always has its primary key
            user_id = new[0]
        else:
            user_id = row.id
            changes: dict[str, bool | int | str] = {"admin": True} if admin else {}
            changes.update(slurm)
            if max_running_gpus is not None:
                changes["max_running_gpus"] = max_running_gpus
            if max_queued_jobs is not None:
                changes["max_queued_jobs"] = max_queued_jobs
            if changes:
                conn.execute(update(users).where(users.c.id == user_id).values(**changes))
        conn.execute(
            insert(tokens).values(user_id=user_id, token_hash=hash_token(token), created_at=now, revoked=False)
        )
    return token


def revoke_tokens(engine: Engine, name: str) -> int:
    """Revoke every token of user ``name``; returns how many were live. InputError for an unknown user."""
    with writing(engine) as conn:
        row = conn.execute(select(users.c.id).where(users.c.name == name)).first()
        if row is None:
            raise InputError(f"no user named {name!r}", field="NAME")
        result = conn.execute(
            update(tokens).where(tokens.c.user_id == row.id, tokens.c.revoked.is_(False)).values(revoked=True)
        )
        return int(result.rowcount)


def list_users(engine: Engine) -> list[dict[str, Any]]:
    live = func.sum(func.cast(tokens.c.revoked.is_(False), users.c.id.type))
    query = (
        select(users, func.coalesce(live, 0).label("tokens"))
        .select_from(users.outerjoin(tokens, tokens.c.user_id == users.c.id))
        .group_by(users.c.id)
        .order_by(users.c.name)
    )
    with reading(engine) as conn:
        return [dict(r._mapping) for r in conn.execute(query)]


def user_for_token(engine: Engine, token: str) -> User | None:
    if not token.startswith(TOKEN_PREFIX) or len(token) > 128:
        return None
    query = (
        select(users)
        .join(tokens, tokens.c.user_id == users.c.id)
        .where(tokens.c.token_hash == hash_token(token), tokens.c.revoked.is_(False))
    )
    with reading(engine) as conn:
        row = conn.execute(query).first()
    if row is None:
        return None
    return User(row.id, row.name, bool(row.admin), row.max_running_gpus, row.max_queued_jobs)
