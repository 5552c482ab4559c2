"""How many upstream calls may be in flight, and how long a call waits for its turn (issue 31: one client's 1,000
slow calls filled the shared pool, which had no wait bound, and another user's call took 57 s instead of 0.02 s).

Three bounds, each with the same bounded wait (SWITCHBOARD_GATEWAY_POOL_WAIT_S): one caller (its user, whatever
key it uses) holds at most `per_key` calls, one provider endpoint at most `per_upstream`, the whole process at most
`pool` (the HTTP client's connection pool is that size, so it never queues a call itself). A caller over its own
bound gets a 429 with Retry-After; a full endpoint sends the call to the next candidate, or, with none left, a 503
with Retry-After. A slot is held from before the connection until the answer's last byte."""

from __future__ import annotations

import asyncio
from collections import deque


class Slots:
    """At most `limit` holders per name; a newcomer past that waits in line (FIFO) up to the wait it is given."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}

    def held(self, name: str) -> int:
        return self._held.get(name, 0)

    async def acquire(self, name: str, wait_s: float) -> bool:
        if self._held.get(name, 0) < self.limit and not self._waiting.get(name):
            self._held[name] = self._held.get(name, 0) + 1
            return True
        if wait_s <= 0:
            return False
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        line = self._waiting.setdefault(name, deque())
        line.append(turn)
        try:
            async with asyncio.timeout(wait_s):
                await turn
            return True  # the releaser handed its slot over (the count did not change)
        except TimeoutError:
            self._leave(name, turn)
            return False
        except asyncio.CancelledError:  # the caller left while waiting
            self._leave(name, turn)
            raise

    def _leave(self, name: str, turn: asyncio.Future[None]) -> None:
        if turn.done() and not turn.cancelled():  # handed over just as the wait ended: pass it on
            self.release(name)
            return
        turn.cancel()
        line = self._waiting.get(name)
        if line is not None and turn in line:
            line.remove(turn)
            if not line:
                self._waiting.pop(name, None)

    def release(self, name: str) -> None:
        line = self._waiting.get(name)
        while line:
            turn = line.popleft()
            if not line:
                self._waiting.pop(name, None)
            if not turn.done():
                turn.set_result(None)  # the slot passes to the first in line
                return
        left = self._held.get(name, 0) - 1
        if left > 0:
            self._held[name] = left
        else:
            self._held.pop(name, None)


class Admission:
    """The three bounds of a call, taken together: `enter` returns a Lease, or the name of the bound that was full
    ('key', 'upstream' or 'pool')."""

    def __init__(self, pool: int, per_upstream: int, per_key: int, wait_s: float) -> None:
        self.pool, self.upstreams, self.keys = Slots(pool), Slots(per_upstream), Slots(per_key)
        self.wait_s = wait_s

    async def enter(self, key: str, upstream: str) -> "Lease | str":
        taken: list[tuple[Slots, str]] = []
        for slots, name, bound in ((self.keys, key, "key"), (self.upstreams, upstream, "upstream"),
                                   (self.pool, "", "pool")):
            try:
                ok = await slots.acquire(name, self.wait_s)
            except BaseException:
                for held, held_name in taken:
                    held.release(held_name)
                raise
            if not ok:
                for held, held_name in taken:
                    held.release(held_name)
                return bound
            taken.append((slots, name))
        return Lease(taken)


class Lease:
    """The slots one upstream call holds; released once, however the call ends."""

    __slots__ = ("_taken",)

    def __init__(self, taken: list[tuple[Slots, str]]) -> None:
        self._taken = taken

    def release(self) -> None:
        taken, self._taken = self._taken, []
        for slots, name in taken:
            slots.release(name)
