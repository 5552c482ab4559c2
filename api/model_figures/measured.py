"""Figures measured by onboarding (flows/model_figures/onboard.py): per benchmark of the calibration suite, how many
questions the model was asked and got right, the accuracy as a figure on that benchmark's scale (percent), and its
95 % Wilson score interval. They join the public figures as rows of the same benchmarks (MMLU-Pro, MATH-L5, CRUX:
proxies the router maps onto its axes, api/routing/capability.py), so the router uses them as it uses public ones.
Stored as JSON on the onboarding run (storage/model_figure_records.py)."""

from __future__ import annotations

import math

import msgspec

from api.routing.capability import FigureRow

Z_95 = 1.959963984540054


class MeasuredFigure(msgspec.Struct, frozen=True):
    benchmark: str   # the public benchmark the suite's questions come from
    kind: str        # knowledge | maths | code: the router's axis it informs
    asked: int       # questions graded (answered or not)
    correct: int
    score: float     # 100 x correct / asked
    low: float       # 95 % Wilson interval, percent
    high: float


def wilson(correct: int, asked: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion, as fractions: unlike the normal approximation it stays
    inside [0, 1] and keeps its coverage near 0 and 1 and for the few dozen questions per benchmark asked here."""
    if asked <= 0:
        return 0.0, 1.0
    p = correct / asked
    centre = (p + z * z / (2 * asked)) / (1 + z * z / asked)
    half = z * math.sqrt(p * (1 - p) / asked + z * z / (4 * asked * asked)) / (1 + z * z / asked)
    return max(0.0, centre - half), min(1.0, centre + half)


def measured(benchmark: str, kind: str, correct: int, asked: int) -> MeasuredFigure:
    low, high = wilson(correct, asked)
    return MeasuredFigure(benchmark, kind, asked, correct, round(100.0 * correct / asked, 3),
                          round(100.0 * low, 3), round(100.0 * high, 3))


def encode(figures: list[MeasuredFigure]) -> str:
    return msgspec.json.encode(figures).decode()


def decode(text: str | None) -> list[MeasuredFigure]:
    return msgspec.json.decode(text, type=list[MeasuredFigure]) if text else []


def figure_rows(provider: str, model: str, figures: list[MeasuredFigure], run_id: str) -> list[FigureRow]:
    """The measured figures as the router's figure rows, sourced to the onboarding run."""
    return [FigureRow(provider.strip().lower(), model.strip().lower(), f.benchmark, f.score,
                      f"switchboard:onboarding/{run_id}") for f in figures if f.asked > 0]
