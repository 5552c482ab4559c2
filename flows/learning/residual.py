"""The nearest-neighbour residual (api/selection/personalization.py) as a challenger: its memory fed the older
labels, in the order the service would have been fed them, and asked for the predicted quality of every logged
candidate of the held-out decisions. The flow scores it off-policy like the cluster correction, so the service
applies it to a preference only once it has measured better there (flows/learning/learn.py)."""

from __future__ import annotations

import numpy as np

from api.selection.personalization import FeedbackMemory
from flows.learning.fit import unit_rows
from flows.learning.table import Evidence

_PREFERENCE = "challenger"  # the memory holds this one preference's feedback only


def residual_quality(train: Evidence, held_out: Evidence) -> np.ndarray:
    """(n held out, k) the router's predicted quality plus the memory's shift, clipped to 0..1 as served."""
    if train.caller_feedback is not None:
        # the service's memory holds caller feedback only (api/selection/feedback.py), never a judge's verdict
        train = train.rows(np.flatnonzero(train.caller_feedback))
    memory = FeedbackMemory()
    models, base = train.chosen_models(), train.chosen_quality()
    for i in range(len(train)):
        memory.add(_PREFERENCE, train.session_ids[i], models[i], train.features[i], int(train.label[i]),
                   float(base[i]))
    quality = held_out.router_quality.copy()
    if len(held_out) == 0 or len(train) == 0:
        return quality
    e = unit_rows(held_out.features).astype(np.float32)
    for m, name in enumerate(held_out.models):
        cells = held_out.model == m
        rows = cells.any(axis=1)
        if not rows.any():
            continue
        shift = np.zeros(len(held_out))
        shift[rows] = memory.shifts(_PREFERENCE, name, e[rows])
        quality += np.where(cells, shift[:, None], 0.0)
    return np.clip(quality, 0.0, 1.0)
