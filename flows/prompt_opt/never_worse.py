"""Never a worse prompt: which prompt a target's result returns, the optimized one or the caller's own.

Both are scored on the same held-out test goldens (pre- and post-optimization evaluations). The optimized prompt is
returned only when its mean score there is strictly higher and it copies no training example; otherwise the caller's
prompt comes back, with `score_improvement` 0 and the reason in the post-optimization evals. The difference is
reported with a paired bootstrap 95 % interval (resampling the test goldens, each scored under both prompts), so a
caller sees how far a gain on a handful of examples can be trusted; the rule itself compares means, since with the
small test sets callers send an interval clear of 0 is rare even for real gains.

A candidate that copies training examples verbatim into its instructions (an inputs' text or a long answer, as a
weak reflection model does when it pastes its feedback) learns the train set, not the task: GEPA's proposals that do
so are refused as they are written (flows/prompt_opt/work.py), and the final check here is the backstop.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

MIN_COPY_CHARS = 20  # shorter texts (labels such as "positive", a city's name) may rightly appear in instructions
BOOTSTRAP_RESAMPLES = 2000


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def copied_examples(instructions: str, original: str, goldens: list[dict[str, Any]],
                    min_chars: int = MIN_COPY_CHARS) -> list[str]:
    """The training texts (field values, answers) of at least `min_chars` characters that `instructions` contains
    verbatim (case and whitespace aside) while the caller's original instructions did not."""
    got, had = _squash(instructions), _squash(original)
    found: list[str] = []
    for golden in goldens:
        for text in [*golden.get("fields", {}).values(), golden.get("answer") or ""]:
            squashed = _squash(str(text))
            if len(squashed) >= min_chars and squashed in got and squashed not in had and squashed not in found:
                found.append(squashed)
    return found


def paired_bootstrap(before: list[float], after: list[float], resamples: int = BOOTSTRAP_RESAMPLES,
                     seed: int = 0) -> tuple[float, float, float]:
    """Mean of after - before over the paired examples, and the 2.5th and 97.5th percentiles of that mean over
    bootstrap resamples of the examples."""
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    if diff.size == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, diff.size, size=(resamples, diff.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)


@dataclass(frozen=True)
class Choice:
    keep_optimized: bool
    reason: str
    report: dict[str, Any]  # the `never_worse` object of the post-optimization evals


def choose(before: list[float], after: list[float], copied: list[str], rejected_proposals: int = 0) -> Choice:
    """The optimized prompt if it beats the original on the test goldens and copies no training example."""
    difference, low, high = paired_bootstrap(before, after)
    pre, post = (float(np.mean(s)) if s else 0.0 for s in (before, after))
    if copied:
        keep, reason = False, (f"the optimized prompt copies {len(copied)} training example text(s) verbatim; the "
                               "original prompt is returned")
    elif post > pre:
        keep, reason = True, "the optimized prompt scores higher than the original on the test goldens"
    else:
        keep, reason = False, (f"the optimized prompt did not beat the original on the test goldens ({post:.3f} vs "
                               f"{pre:.3f}); the original prompt is returned")
    report = {"returned": "optimized" if keep else "original", "reason": reason,
              "original_score": pre, "optimized_score": post, "difference": difference,
              "difference_ci95": [low, high], "num_examples": len(before), "copied_training_texts": len(copied),
              "rejected_copying_proposals": rejected_proposals}
    return Choice(keep, reason, report)
