"""Conversations stay on their model: one rule for modelSelect and the gateway (SelectionService.decide).

A follow-up turn names the model of its previous turn (modelSelect and the gateway: the session named by
`previous_session`; the gateway also recognises a conversation by its messages, api/gateway/calls.py). That model
is put first when it is still an eligible candidate and the router's own first choice beats it by no more than the
margin (SWITCHBOARD_GATEWAY_STICKY_MARGIN, 0.05) of the policy's utility: predicted quality less the priced
trade-off, so at the default setting 5 points of predicted accuracy. A session of another user, or one this
server does not know, names no model: the router decides afresh, and the caller learns nothing either way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

DEFAULT_MARGIN = 0.05


def kept_position(keys: Sequence[str], utility: Sequence[float], previous: str | None, margin: float) -> int | None:
    """Where the previous turn's model stands in the ranking (`keys`, best first, with `utility` aligned) when it
    should answer instead of the router's first choice; None when the ranking stands as it is."""
    if previous is None or previous not in keys[1:]:
        return None
    j = list(keys).index(previous)
    return j if utility[0] - utility[j] <= margin else None


def previous_model(session_id: str, user_id: str, find: Callable[[str], dict[str, Any] | None],
                   answered: Callable[[str, str], str | None] | None = None) -> str | None:
    """The model of the session's turn: the one that answered it when the gateway made the call here (`answered`:
    it may have fallen back), else the one chosen for it (`find`: the session log). None for another user's."""
    if answered is not None:
        found = answered(session_id, user_id)
        if found is not None:
            return found
    row = find(session_id)
    if row is None or row.get("user_id") != user_id:
        return None
    return row.get("chosen")
