"""Several deployments of one model (api/deployments.py): tried in an order drawn by weight, each call, and one that
keeps failing cools down. A deployment failing COOL_AFTER times in a row (on the errors that already move the
gateway to its next candidate) is tried last for SWITCHBOARD_DEPLOYMENT_COOLDOWN_S seconds (default 30), after the
healthy ones; its next success, or the end of the cool-down, puts it back in the draw. A model with one route
skips all of this. State is per API process: cheap, and each worker learns the same outage within a few calls."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from api.deployments import Route

COOL_AFTER = 3


class Balancer:
    def __init__(self, cooldown_s: float = 30.0, rng: random.Random | None = None) -> None:
        self.cooldown_s = cooldown_s
        self.rng = rng or random.Random()
        self.failures: dict[str, int] = {}
        self.cooled_until: dict[str, float] = {}

    def cooling(self, deployment: str, now: float | None = None) -> bool:
        until = self.cooled_until.get(deployment)
        return until is not None and (now if now is not None else time.monotonic()) < until

    def order(self, routes: Sequence[Route]) -> list[Route]:
        """Healthy routes in a weighted random order (without replacement), then the cooling ones."""
        if len(routes) < 2:
            return list(routes)
        now = time.monotonic()
        healthy = [r for r in routes if not self.cooling(r.deployment, now)]
        cooling = [r for r in routes if self.cooling(r.deployment, now)]
        # Efraimidis-Spirakis: sort by u ** (1 / weight), a weighted draw without replacement in one pass
        healthy.sort(key=lambda r: self.rng.random() ** (1.0 / r.weight), reverse=True)
        return healthy + cooling

    def failed(self, deployment: str) -> None:
        count = self.failures.get(deployment, 0) + 1
        self.failures[deployment] = count
        if count >= COOL_AFTER:
            self.cooled_until[deployment] = time.monotonic() + self.cooldown_s

    def succeeded(self, deployment: str) -> None:
        if self.failures.pop(deployment, None) is not None:
            self.cooled_until.pop(deployment, None)
