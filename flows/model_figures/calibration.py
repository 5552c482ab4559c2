"""Asking a model the calibration suite within its caps, and turning its graded answers into measured figures.

Caps (SWITCHBOARD_ONBOARD_MAX_CALLS, SWITCHBOARD_ONBOARD_MAX_COST_USD): at most `max_calls` questions, and a question
is asked only if the spend so far, plus the worst case of every call in flight and of this one (its prompt at 3
characters a token, the whole output-token cap), stays within `max_cost_usd`; so the cap holds whatever the replies
cost. A question the provider refuses (a 400: a content filter, a prompt it cannot take) is not graded; a run whose
first MAX_REFUSALS questions are all refused ends.
Accuracy per benchmark comes with its 95 % Wilson interval (api/model_figures/measured.py); a benchmark with fewer
than MIN_ASKED graded answers gives no figure (its interval would say little)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from api.model_figures.measured import MeasuredFigure, measured
from flows.model_figures.suite import KINDS, Item, graded

MIN_ASKED = 10
MAX_REFUSALS = 10  # refusals before a run that has no answer at all gives up (the model cannot take the suite)
CHARS_PER_TOKEN_WORST = 3.0


class Refused(RuntimeError):
    """The provider answered one question with an error (a content filter, a bad request): skip it."""


@dataclass
class Calibration:
    asked: Counter = field(default_factory=Counter)    # benchmark -> graded answers
    correct: Counter = field(default_factory=Counter)
    calls: int = 0
    refusals: int = 0
    stopped: str | None = None  # 'cost cap', 'provider error: ...', None: the suite or the call cap ran out

    def figures(self) -> list[MeasuredFigure]:
        return [measured(b, KINDS[b], self.correct[b], self.asked[b]) for b in KINDS if self.asked[b] >= MIN_ASKED]


def worst_cost(item: Item, prices: tuple[float, float], max_tokens: int) -> float:
    chars = sum(len(m["content"]) for m in item.messages())
    return (chars / CHARS_PER_TOKEN_WORST * prices[0] + max_tokens * prices[1]) / 1e6


def calibrate(items: Sequence[Item], ask: Callable[[Item], str], *, prices: tuple[float, float], max_tokens: int,
              max_calls: int, max_cost_usd: float, spent: Callable[[], float], threads: int = 4) -> Calibration:
    """Ask `items` in order (at most max_calls), `threads` at a time; `ask(item)` returns the reply text, raises
    Refused to skip a question, or anything else to end the run (a provider outage, a missing key)."""
    result = Calibration()
    todo = list(items[:max_calls])
    in_flight: dict[Future, tuple[Item, float]] = {}
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="onboarding") as pool:
        while todo or in_flight:
            while todo and len(in_flight) < threads and result.stopped is None:
                worst = worst_cost(todo[0], prices, max_tokens)
                if spent() + sum(w for _, w in in_flight.values()) + worst > max_cost_usd:
                    result.stopped = "cost cap"
                    break
                item = todo.pop(0)
                in_flight[pool.submit(ask, item)] = (item, worst)
            if not in_flight:
                break
            done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            for future in done:
                item, _ = in_flight.pop(future)
                _record(result, item, future)
            if result.stopped is not None:
                todo.clear()  # let the calls in flight finish (they are paid for), start no more
    return result


def _record(result: Calibration, item: Item, future: Future) -> None:
    try:
        reply = future.result()
    except Refused:
        result.refusals += 1
        if result.refusals >= MAX_REFUSALS and result.calls == 0:
            result.stopped = result.stopped or "provider error: every question was refused"
        return
    except Exception as exc:
        result.stopped = result.stopped or f"provider error: {type(exc).__name__}"
        return
    result.calls += 1
    result.asked[item.benchmark] += 1
    result.correct[item.benchmark] += graded(item, reply)
