"""How a project secret is kept at rest: Fernet (``cryptography``: AES-128-CBC with an HMAC-SHA256 tag) under the
keys of SECRETS_KEY, and the hint a user recognises it by.

SECRETS_KEY is a comma-separated list: the first key encrypts, every key decrypts (``MultiFernet``), so an operator
rotates by putting a new key first, re-encrypting (``python -m api.admin secrets reencrypt``) and then dropping the
old one. Unset, the embedded defaults (one machine, ``make demo``) generate a key once into
``<state_dir>/secrets_key`` (mode 0600) and say that production should set one; beyond one machine each API host
would generate its own key and decrypt nothing the others wrote, so secrets are off (503) until it is set.

No message here ever carries a key or a value: a malformed key is named by its position in the list.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from api.core.errors import Unavailable
from api.core.settings import ApiSettings

log = logging.getLogger(__name__)
KEY_FILE = "secrets_key"
HINT_CHARS = 4  # shown only for values at least HINT_MIN_LENGTH long: never more than a quarter of one
HINT_MIN_LENGTH = 16


class Undecryptable(Exception):
    """A stored secret that none of SECRETS_KEY's keys decrypts: the key changed since it was written."""


def hint(value: str) -> str:
    """Enough to recognise a secret by (which of my keys is this?), never enough to use it: the last
    ``HINT_CHARS`` characters of a value of at least ``HINT_MIN_LENGTH``, else only its length."""
    if len(value) >= HINT_MIN_LENGTH:
        return f"…{value[-HINT_CHARS:]}"
    return f"{len(value)} characters"


def encrypt(settings: ApiSettings, value: str) -> str:
    """The value as a Fernet token under SECRETS_KEY's first key (a fresh IV each time: equal values differ)."""
    return cipher(settings).encrypt(value.encode()).decode()


def decrypt(settings: ApiSettings, token: str) -> str:
    """The value of a stored token; ``Undecryptable`` when no key of SECRETS_KEY opens it, ``Unavailable`` when
    there is no key at all."""
    try:
        return cipher(settings).decrypt(token.encode()).decode()
    except InvalidToken:
        raise Undecryptable("no key of SECRETS_KEY decrypts it (the key changed since it was written)") from None


def reencrypt(settings: ApiSettings, token: str) -> str:
    """The token under SECRETS_KEY's first key (``MultiFernet.rotate``), so an older key can be retired."""
    try:
        return cipher(settings).rotate(token.encode()).decode()
    except InvalidToken:
        raise Undecryptable("no key of SECRETS_KEY decrypts it (the key changed since it was written)") from None


def cipher(settings: ApiSettings) -> MultiFernet:
    """SECRETS_KEY's keys, or the embedded key file on one machine; 503 ``secrets_unavailable`` beyond one machine
    without SECRETS_KEY, or when a key of it is not a Fernet key."""
    configured = settings.secrets_key.get_secret_value() if settings.secrets_key is not None else ""
    keys = tuple(k.strip() for k in configured.split(",") if k.strip())
    if not keys:
        if not settings.single_machine:
            raise Unavailable(
                "project secrets are off: the operator has not set SECRETS_KEY on the API (required once "
                "DATABASE_URL or BROKER_URL is set; see the configuration docs)",
                code="secrets_unavailable",
            )
        keys = (embedded_key(settings.state_dir),)
    return _multi_fernet(keys)


@functools.lru_cache(maxsize=8)
def _multi_fernet(keys: tuple[str, ...]) -> MultiFernet:
    fernets = []
    for position, key in enumerate(keys, start=1):
        try:
            fernets.append(Fernet(key))
        except (ValueError, TypeError):
            raise Unavailable(
                f"project secrets are off: key {position} of SECRETS_KEY is not a Fernet key (32 url-safe base64 "
                'bytes: python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())")',
                code="secrets_unavailable",
            ) from None
    return MultiFernet(fernets)


@functools.lru_cache(maxsize=8)
def embedded_key(state_dir: Path) -> str:
    """The embedded defaults' key: generated once into ``<state_dir>/secrets_key`` (0600), read back after. Whoever
    writes first wins (write aside, then link into place), so an API and a CLI starting together agree."""
    path = state_dir / KEY_FILE
    if not path.exists():
        state_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{KEY_FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(Fernet.generate_key().decode())
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
        tmp.unlink()
    log.warning(
        "SECRETS_KEY is not set: project secrets are encrypted with a key generated into %s. Fine on one machine; a "
        "production deployment sets SECRETS_KEY (and keeps it: secrets written under a lost key are gone)",
        path,
    )
    return path.read_text().strip()
