"""Grading one preference's sampled gateway answers (docs/routing.md, "Judge sampling"): the judge's prompt and how
its verdict is read, the prices a call is billed at, the day's spend so far, and the batch itself, which stops when
the next call would start beyond the preference's daily budget. Calls go through the prompt optimizer's model-call
layer (flows/prompt_opt/llm.py: LiteLLM via DSPy, each call a usage record of a ledger); the flow
(flows/learning/judge.py) writes the ledger to the usage log and the verdicts to `judge_verdicts`."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Any

import msgspec

from api.catalogue import Catalogue, Prices, billed_prices_of
from api.routing.text import MessageShapeError, message_texts

JUDGE_TASK, SHADOW_TASK = "judge_traffic", "shadow_call"  # task types of the usage log
JUDGE_SYSTEM = ("You grade an assistant's answer to a user's request. Write one line with your reason, then a last "
                "line `verdict: 1` if the answer is correct and does what was asked, or `verdict: 0` if it does not.")
_VERDICT = re.compile(r"verdict\s*[:=]\s*\**\s*([01])\b", re.IGNORECASE)


def usage_run_id(preference_id: str) -> str:
    """The usage log's adaptation_run_id of a preference's judge and shadow calls: what its daily spend sums."""
    return f"judge-traffic:{preference_id}"


def conversation(content: str) -> list[dict[str, str]]:
    """The sampled request's messages (JSON, as the sessions row keeps them) as plain role/text turns."""
    try:
        turns = message_texts(msgspec.json.decode(content))
    except (MessageShapeError, msgspec.DecodeError):
        return []
    return [{"role": role if role in ("system", "assistant") else "user", "content": text} for role, text in turns]


def grading_messages(turns: list[dict[str, str]], answer: str) -> list[dict[str, str]]:
    shown = "\n\n".join(f"[{t['role']}]\n{t['content']}" for t in turns)
    return [{"role": "system", "content": JUDGE_SYSTEM},
            {"role": "user", "content": f"Request:\n<<<{shown}>>>\n\nAnswer:\n<<<{answer}>>>"}]


def parse_verdict(reply: str) -> int | None:
    """The last `verdict: 0|1` of the judge's reply; None when it gave none (no label is recorded then)."""
    found = _VERDICT.findall(reply or "")
    return int(found[-1]) if found else None


def prices_for(name: str, sample: dict[str, Any], catalogue: Catalogue) -> Prices | None:
    """USD per million (input, output) tokens a judge or shadow call of `name` is billed at: the one rule of
    api/catalogue/pricing.py, given the prices the request declared for it (a custom model the catalogue lacks is
    billed at the caller's prices; a catalogue model always at the catalogue's). None when neither knows it (it
    cannot be counted against a budget, so it is not called)."""
    declared = next(((float(pin), float(pout)) for key, pin, pout in zip(
        sample.get("candidates") or (), sample.get("input_prices") or (), sample.get("output_prices") or ())
        if key == name and pin is not None and pout is not None), None)
    return billed_prices_of(catalogue, name, declared)


@dataclass
class Batch:
    """What one preference's grading produced: verdict rows, and why it stopped early, if it did."""

    verdicts: list[dict[str, Any]] = field(default_factory=list)
    stopped: str | None = None  # 'budget', 'provider error: ...', 'unpriced judge ...'
    unparsed: int = 0


def verdict_row(sample: dict[str, Any], model: str, shadow: bool, verdict: int | None, judge_model: str,
                cost: float) -> dict[str, Any]:
    return {"verdict_id": str(uuid.uuid4()), "created_at": datetime.now(timezone.utc),
            "session_id": sample["session_id"], "preference_id": sample["preference_id"], "model": model,
            "shadow": shadow, "propensity": sample["shadow_propensity"] if shadow else None, "verdict": verdict,
            "judge_model": judge_model, "cost_usd": cost, "embedding": sample.get("embedding")}


def today_utc() -> date:
    return datetime.now(timezone.utc).date()


Reply = Callable[[str, tuple[float, float], str, str, list[dict[str, str]]], str]


def grade(samples: list[dict[str, Any]], judge_model: str, reply: Reply, catalogue: Catalogue,
          spent: Callable[[], float]) -> Batch:
    """Grade the samples in order: a shadow call first where one was drawn, then the judge on each answer not yet
    judged (`answer_judged` / `shadow_judged` say which are). `reply(model, prices, task type, role, messages)`
    is one billed call; it raises CostCeilingExceeded (flows/prompt_opt/usage.py) before a call once the budget
    is spent, which ends the batch, as does any other error (the rest waits for the next run). `spent()` is the
    batch's spend so far, so each verdict row carries its own."""
    # lazy: the ledger's module (pyarrow) loads in the flow run only
    from flows.prompt_opt.usage import CostCeilingExceeded

    batch = Batch()
    for sample in samples:
        turns = conversation(sample["content"])
        judge_prices = prices_for(judge_model, sample, catalogue)
        if judge_prices is None:
            batch.stopped = f"the judge {judge_model} has no known price: nothing graded"
            break
        todo: list[tuple[str, str | None, bool]] = []
        if not sample["answer_judged"]:
            todo.append((sample["model"], sample["answer"], False))
        if sample["shadow_model"] and not sample["shadow_judged"]:
            todo.append((sample["shadow_model"], None, True))
        try:
            for model, answer, shadow in todo:
                before = spent()
                if answer is None:
                    shadow_prices = prices_for(model, sample, catalogue)
                    if shadow_prices is None or not turns:
                        continue
                    answer = reply(model, shadow_prices, SHADOW_TASK, "target", turns)
                verdict = parse_verdict(reply(judge_model, judge_prices, JUDGE_TASK, "judge",
                                              grading_messages(turns, answer))) if turns else None
                batch.unparsed += verdict is None  # recorded as no verdict, so it is not paid for again
                batch.verdicts.append(verdict_row(sample, model, shadow, verdict, judge_model, spent() - before))
        except CostCeilingExceeded:
            batch.stopped = "budget"
            break
        except Exception as exc:  # a provider outage: stop spending; these samples stay unjudged
            batch.stopped = f"provider error: {type(exc).__name__}"
            break
    return batch
