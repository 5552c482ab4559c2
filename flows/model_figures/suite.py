"""The calibration suite onboarding asks a model (datasets/calibration/, data card there): closed-form questions of
three public benchmarks, one per axis of the router (api/routing/capability.py), each graded automatically the way
the benchmark's published per-question results were:
- knowledge: MMLU-Pro (multiple choice, A-J): the letter after "answer is", as MMLU-Pro's extractor reads it;
- maths: MATH level 5: the first number of the final answer equals the reference's first number (ZeroEval's rule);
- code: CRUX (CRUXEval output prediction): the final answer, outer quotes stripped, equals the reference literal.
Items are interleaved (knowledge, maths, code, ...), so a run stopped by its call or spend cap has measured every
axis about equally."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

from api.shipped import shipped

SUITE_VERSION = 1
KINDS = {"MMLU-Pro": "knowledge", "MATH-L5": "maths", "CRUX": "code"}
INSTRUCTIONS = {
    "MMLU-Pro": ("Answer the multiple-choice question. Think step by step, then finish with the line "
                 "\"The answer is (X)\" where X is the letter of the correct option."),
    "MATH-L5": ("Solve the problem. Think step by step, then finish with a last line \"Answer: <final answer>\" "
                "giving only the final answer (a number or expression)."),
    "CRUX": ("Work out what the assertion's ?? must be. Think step by step, then finish with a last line "
             "\"Answer: <literal>\" giving only the Python literal."),
}


@dataclass(frozen=True)
class Item:
    item_id: str      # '<benchmark>:<id in the source file>'
    benchmark: str
    prompt: str
    answer: str

    @property
    def kind(self) -> str:
        return KINDS[self.benchmark]

    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": INSTRUCTIONS[self.benchmark]}, {"role": "user", "content": self.prompt}]


@lru_cache(maxsize=1)
def load_suite() -> tuple[Item, ...]:
    path = shipped("calibration", "suite.jsonl")
    with path.open(encoding="utf-8") as f:
        return tuple(Item(r["id"], r["benchmark"], r["prompt"], r["answer"]) for r in map(json.loads, f))


_LETTER = (re.compile(r"answer is \(?([A-J])\)?", re.IGNORECASE), re.compile(r"answer:\s*\(?([A-J])\)?\b", re.I))
_FINAL = re.compile(r"answer\s*:\s*(.+?)[ \t\r]*(?=\n|\Z)", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:/\d+)?")


def graded(item: Item, reply: str) -> bool:
    """Whether the reply answers the item right (no parsable answer: wrong)."""
    if item.benchmark == "MMLU-Pro":
        return _letter(reply) == item.answer.strip().upper()
    final = _final(reply)
    if final is None:
        return False
    if item.benchmark == "MATH-L5":
        mine, reference = _first_number(final), _first_number(item.answer)
        return mine is not None and mine == reference
    return _unquoted(final) == _unquoted(item.answer)


def _letter(reply: str) -> str | None:
    for pattern in _LETTER:
        found = pattern.findall(reply or "")
        if found:
            return found[-1].upper()
    standalone = re.findall(r"\b([A-J])\b", reply or "")
    return standalone[-1] if standalone else None


def _final(reply: str) -> str | None:
    found = _FINAL.findall(reply or "")
    return found[-1].strip().strip("`").strip() if found else None


def _first_number(text: str) -> Fraction | None:
    cleaned = text.replace("$", "").replace(",", "").replace("\\frac{", "").replace("}{", "/").replace("}", "")
    found = _NUMBER.search(cleaned)
    if not found:
        return None
    try:
        return Fraction(found.group(0))
    except (ValueError, ZeroDivisionError):
        return None


def _unquoted(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text
