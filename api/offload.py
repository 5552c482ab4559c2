"""Blocking work off the event loop. A call to the store may be an HTTP call to the store owner (slow while it
restarts), and parsing reads files: on the loop, either would hold up every other request of the worker."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return await anyio.to_thread.run_sync(partial(fn, *args, **kwargs))
