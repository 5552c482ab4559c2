"""The trade-off dial, calibrated to each caller's own traffic.

`cost_quality_tradeoff` t picks lambda for the policy (api/routing/policy.py: u = q - lambda * x, x the candidate's
normalised log cost). A schedule calibrated on training prompts describes neither a caller's traffic nor their
models: on unfamiliar prompts most predicted gaps fall on one side of a few training quantiles, and the dial moves
all traffic at one step and none at the others. Here lambda(t) is set so that, over this caller's recent decisions
with this candidate set, the mean cost position of the choice moves an even tenth of the way from the quality-first
choice (t = 0) to the cheapest candidate (t = 10) per step: between two models, t sends about (10 - t)/10 of the
calls to the dearer one, whatever the prompts.

- A caller is (user, preference, candidate set); each keeps a bounded sample of its recent decisions (predicted
  quality and cost position per candidate): a reservoir over about its last `horizon` decisions, not just the
  latest ones, so traffic that arrives sorted (one subject after another) still calibrates on its mix. At most
  `max_callers` callers are kept (least recently used go).
- Until a caller has `full_history` decisions, a broad shipped pool of prompts (the default router's calibration
  pool, scored for the same candidates) stands in for the missing ones, weighted down as history grows.
- Nothing is fitted on the request path: `record` only appends, and a background thread (`start`) refreshes a
  caller's schedule as its decisions accumulate (after 8, then every tenth more, at least every 64) and scores the
  pool for a candidate set it has not seen. Until then the caller gets the pool's schedule for its candidates, or,
  for a candidate set not scored yet, the router's own trained schedule. A refresh pass does a bounded amount of
  work, so a flood of new callers or candidate sets cannot take a core.
- For fixed scores the choice is still monotone in t: lambda(t) never decreases with t.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

STEPS = 11
GRID = np.concatenate([[0.0], np.geomspace(1e-4, 20.0, 300)])  # lambda values a schedule is read from
PER_PASS = 32  # callers and candidate sets refreshed per background pass
INF = float("inf")

CallerKey = tuple[str, str, tuple[str, ...]]


def switch_points(quality: np.ndarray, position: np.ndarray) -> np.ndarray:
    """For each decision, the lambda at which the policy first leaves its quality-first choice for a cheaper one:
    reading the curve exactly there lets a schedule split decisions whose gaps differ by a hair."""
    best = quality.argmax(axis=1)
    qb = np.take_along_axis(quality, best[:, None], axis=1)
    xb = np.take_along_axis(position, best[:, None], axis=1)
    dx = xb - position
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(dx > 0, (qb - quality) / np.where(dx > 0, dx, 1.0), np.inf)
    first = ratio.min(axis=1)
    return first[np.isfinite(first)]


def mean_cost_position(quality: np.ndarray, position: np.ndarray, weights: np.ndarray,
                       lambdas: np.ndarray) -> np.ndarray:
    """Weighted mean cost position of the policy's choice at each lambda: (len(lambdas),)."""
    out = np.empty(len(lambdas))
    for start in range(0, len(lambdas), 64):  # in blocks: 100 candidates x hundreds of rows stay a few MB
        lam = lambdas[start:start + 64]
        # Ties go to the cheaper candidate, as in the policy.
        utility = quality[None, :, :] - (lam[:, None, None] + 1e-12) * position[None, :, :]
        chosen = utility.argmax(axis=2)  # (block, n)
        picked = np.take_along_axis(np.broadcast_to(position, utility.shape), chosen[:, :, None], axis=2)[:, :, 0]
        out[start:start + 64] = picked @ weights / max(float(weights.sum()), 1e-12)
    return out


def calibrate(quality: np.ndarray, position: np.ndarray, weights: np.ndarray) -> tuple[float, ...]:
    """lambda(t), t = 0..10: the smallest lambda at which the mean cost position has come down (t/10) of the way
    from quality-first to cheapest. (n, m) quality and cost position in [0, 1]; (n,) weights.

    The mean cost position never rises with lambda (each decision only moves to cheaper candidates), so each
    step's lambda is found by bisection over the candidate lambdas, all nine steps at once: about ten evaluations
    of the curve instead of hundreds (this runs in the API process, beside the requests)."""
    lambdas = np.unique(np.concatenate([GRID, switch_points(quality, position) * (1 + 1e-9)]))
    top = float(mean_cost_position(quality, position, weights, lambdas[:1])[0])
    bottom = float(position.min(axis=1) @ weights / max(float(weights.sum()), 1e-12))
    targets = top - np.arange(1, STEPS - 1) / (STEPS - 1) * (top - bottom) + 1e-12
    lo, hi = np.zeros(len(targets), dtype=int), np.full(len(targets), len(lambdas))  # first index reached in [lo, hi]
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        open_ = lo < hi
        reached = np.zeros(len(targets), dtype=bool)
        reached[open_] = mean_cost_position(quality, position, weights, lambdas[mid[open_]]) <= targets[open_]
        hi = np.where(open_ & reached, mid, hi)
        lo = np.where(open_ & ~reached, mid + 1, lo)
    steps = lambdas[np.minimum(lo, len(lambdas) - 1)]
    schedule = np.concatenate([[0.0], steps, [INF]])
    return tuple(float(x) for x in np.maximum.accumulate(schedule))


@dataclass
class CallerHistory:
    quality: np.ndarray  # (window, m) reservoir
    position: np.ndarray
    horizon: int = 1024
    count: int = 0
    schedule: tuple[float, ...] | None = None
    fitted_at: int = 0  # count when the schedule was last fitted
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(0))

    def append(self, quality: np.ndarray, position: np.ndarray) -> None:
        """Reservoir sampling over roughly the last `horizon` decisions: the n-th decision replaces a random slot
        with probability window / min(n, horizon), so older ones fade out without the newest crowding them."""
        window = len(self.quality)
        if self.count < window:
            slot = self.count
        else:
            draw = int(self.rng.integers(0, min(self.count + 1, self.horizon)))
            slot = draw if draw < window else -1
        if slot >= 0:
            self.quality[slot], self.position[slot] = quality, position
        self.count += 1

    @property
    def due(self) -> bool:
        new = self.count - self.fitted_at
        return new >= 8 and (new >= 64 or new >= self.fitted_at // 10)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        n = min(self.count, len(self.quality))
        return self.quality[:n], self.position[:n]


# Candidates (sorted by key) -> the pool's (quality (n, m), cost position (n, m)), or None without a pool.
PoolScorer = Callable[[Sequence[Any]], tuple[np.ndarray, np.ndarray] | None]


@dataclass
class TrafficDial:
    """Per-caller trade-off schedules; `pool` scores the shipped calibration pool for a candidate set."""

    pool: PoolScorer
    window: int = 256
    full_history: int = 50  # decisions after which the caller's own traffic alone calibrates its dial
    max_callers: int = 2000
    horizon: int = 1024  # decisions a caller's dial remembers, about (see CallerHistory.append)
    max_cells: int = 4096  # window x candidates per caller: 100 candidates keep their last 40 decisions
    max_pools: int = 1000
    _callers: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _pools: OrderedDict = field(default_factory=OrderedDict, repr=False)
    _pending_pools: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stop: threading.Event = field(default_factory=threading.Event, repr=False)

    def schedule_for(self, caller: CallerKey, candidates: Sequence[Any], fallback: Sequence[float]) -> Sequence[float]:
        """The caller's current schedule (candidate keys sorted in `caller`); before it has one, the pool's for its
        candidates, or `fallback` while the pool is not scored for them yet (queued for the background pass)."""
        history = self._callers.get(caller)
        if history is not None and history.schedule is not None:
            return history.schedule
        pooled = self._pools.get(caller[2])
        if pooled is None:
            with self._lock:
                self._pending_pools[caller[2]] = candidates
            return fallback
        return pooled[1] if pooled[1] is not None else fallback

    def record(self, caller: CallerKey, quality: np.ndarray, position: np.ndarray) -> None:
        """Remember one decision (arrays aligned with the sorted candidate keys of `caller`). Cheap: no fitting."""
        with self._lock:
            history = self._callers.get(caller)
            if history is None:
                m = len(caller[2])
                rows = max(16, min(self.window, self.max_cells // m))
                history = CallerHistory(np.zeros((rows, m), np.float32), np.zeros((rows, m), np.float32),
                                        horizon=self.horizon)
                self._callers[caller] = history
                if len(self._callers) > self.max_callers:
                    self._callers.popitem(last=False)
            else:
                self._callers.move_to_end(caller)
            history.append(quality, position)

    def refresh(self) -> int:
        """One bounded pass: score the pool for queued candidate sets, refit callers that are due. Returns the
        number of schedules computed."""
        with self._lock:
            pools = list(self._pending_pools.items())[:PER_PASS]
            for keys, _ in pools:
                del self._pending_pools[keys]
            callers = [(key, h) for key, h in self._callers.items() if h.due][:PER_PASS]
            for _, h in callers:
                h.fitted_at = h.count
        for keys, candidates in pools:
            self._pool_rows(keys, candidates)
        for key, h in callers:
            q, x = h.rows()
            weights = np.ones(len(q))
            missing = max(self.full_history - h.count, 0)
            pooled = self._pools.get(key[2], (None, None))[0] if missing else None
            if pooled is not None:
                pq, px = pooled
                q, x = np.vstack([q, pq]), np.vstack([x, px])
                weights = np.concatenate([weights, np.full(len(pq), missing / len(pq))])
            h.schedule = calibrate(q, x, weights)
        return len(pools) + len(callers)

    def start(self, every_s: float = 0.5) -> "TrafficDial":
        def loop() -> None:
            while not self._stop.wait(every_s):
                try:
                    self.refresh()
                except Exception:  # a bad row must not stop calibration for everyone; the next pass retries
                    pass
        threading.Thread(target=loop, name="trade-off-dial", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _pool_rows(self, keys: tuple[str, ...], candidates: Sequence[Any]) -> tuple[np.ndarray, np.ndarray] | None:
        """The pool scored for these candidates (computed once per candidate set, then cached)."""
        cached = self._pools.get(keys)
        if cached is None:
            scored = self.pool(candidates)
            schedule = calibrate(scored[0], scored[1], np.ones(len(scored[0]))) if scored is not None else None
            cached = (scored, schedule)
            with self._lock:
                self._pools[keys] = cached
                if len(self._pools) > self.max_pools:
                    self._pools.popitem(last=False)
        return cached[0]
