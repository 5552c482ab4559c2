"""How long modelSelect tells a client to wait (`Retry-After`) while a preference's custom router trains.

The estimate is the typical time from upload to a live router, less the time since this job's upload: the typical
time is the median of recent completed trainings of a similar size (storage/repositories/routers.py,
`expected_training_seconds`), or DEFAULT_EXPECTED_S before any completed. A job already past the typical time is
either waiting for another run (not started: most of a training is still ahead, so a third of the typical time) or
nearly done (processing: a tenth). Always whole seconds in [1, MAX_S]: a client that asks again too early gets
another cheap 409, one told to wait too long waits for nothing (docs/api.md, "Waiting for a custom router").
"""

from __future__ import annotations

import math

# Upload to live router before any training completed here: 16 s for a small upload on a quiet 2-core machine, 20-30 s
# on a busy one (docs/benchmarks.md, "Issue 20, item 4").
DEFAULT_EXPECTED_S = 20.0
MAX_S = 60  # a long training is asked about at least once a minute
NOT_STARTED = ("created", "queued")


def retry_after_seconds(status: str, elapsed_s: float, expected_s: float | None) -> int:
    """Seconds until the router of a job in `status`, uploaded `elapsed_s` ago, is likely live."""
    expected = expected_s if expected_s is not None and expected_s > 0 else DEFAULT_EXPECTED_S
    left = expected - (elapsed_s if elapsed_s > 0 else 0.0)  # a clock behind the store's counts as just uploaded
    started = status not in NOT_STARTED
    if left <= 0:  # later than usual
        left = expected / 10 if started else expected / 3
    floor = 1 if started else 2  # a run that has not started still has to start
    return int(min(MAX_S, max(floor, math.ceil(left))))
