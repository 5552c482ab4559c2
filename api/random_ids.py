"""Unguessable ids without a system call per id: request ids (api/request_id.py) and session ids
(api/selection/sessions.py) take their random bytes from a pool that reads os.urandom 4 KiB at a time.

uuid4() reads os.urandom for every id, and os.urandom releases the interpreter lock for its system call: on a busy
API worker, getting it back meant waiting behind the session log's and the log listener's threads (about 5 % of a
modelSelect in process, docs/benchmarks.md, issue 36). The pool's bytes are the kernel's CSPRNG output, each handed
out once, so an id is as unguessable as before. A forked child forgets the pool (os.register_at_fork), or two
workers forked from one parent would hand out the same bytes.
"""

from __future__ import annotations

import os
import threading

BLOCK_BYTES = 4096  # 256 request ids or 512 session ids per system call


class RandomPool:
    def __init__(self, block: int = BLOCK_BYTES) -> None:
        self._block = block
        self._lock = threading.Lock()
        self._bytes = b""
        self._at = 0

    def take(self, n: int) -> bytes:
        """`n` fresh random bytes, never handed out before."""
        with self._lock:
            if self._at + n > len(self._bytes):
                self._bytes, self._at = os.urandom(max(self._block, n)), 0
            start = self._at
            self._at = start + n
            return self._bytes[start:start + n]

    def forget(self) -> None:
        """Drop the unused bytes (a forked child must not reuse its parent's)."""
        self._lock = threading.Lock()  # a lock held by another thread at fork time would never be released here
        self._bytes, self._at = b"", 0


POOL = RandomPool()
os.register_at_fork(after_in_child=POOL.forget)


def random_hex(n_bytes: int) -> str:
    """`n_bytes` random bytes as lowercase hex: a request id of 16 bytes is as long as uuid4().hex."""
    return POOL.take(n_bytes).hex()
