"""API key format and hashing. Keys are 256-bit random tokens, so a plain SHA-256 is a safe one-way hash."""

from __future__ import annotations

import hashlib
import secrets

KEY_PREFIX = "sb-"


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def display_prefix(key: str) -> str:
    """Enough of the key for a person to tell keys apart in `keys list`, too little to use."""
    return key[: len(KEY_PREFIX) + 6]
