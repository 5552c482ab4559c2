"""Controllers declare the few components they use, by name; this is how each one is provided.

The app builds its components once at start-up (api/services.py) and keeps them in its state; a controller names
only what it needs (`selection`, `feedback`, ...), as litestar-fullstack does, instead of receiving them all.
"""

from __future__ import annotations

from typing import Any

from litestar.datastructures import State
from litestar.di import NamedDependency, Provide

from storage.records import User


def component(name: str) -> Provide:
    """A dependency on one component of the app's Services (see api/services.py) by its field name."""
    def provide(state: State) -> Any:
        return getattr(state.services, name)

    return Provide(provide, sync_to_thread=False)


def after_auth(name: str) -> Provide:
    """component(name), resolved only once the caller is authenticated (it names `user`). Litestar resolves
    dependencies that do not depend on each other concurrently, in an anyio task group, which costs about 70 us a
    request; on the hot path (modelSelect, feedback) ordering them is cheaper, and nothing is handed out before the
    key is checked."""
    def provide(state: State, user: NamedDependency[User]) -> Any:
        return getattr(state.services, name)

    return Provide(provide, sync_to_thread=False)
