"""What training derives from the public per-benchmark figures (datasets/model_benchmarks.csv) and stores in the
router: the price line for models without any figure and the lines that fill a missing maths or code figure from
the knowledge one (api/routing/capability.py applies them)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from api.catalogue import load_catalogue
from api.routing.capability import AXES, CapabilityPrior, FallbackLine, FigureRow, axis_scores, to_capability


def fit_fallback(rows: list[FigureRow]) -> FallbackLine:
    """Least-squares capability ~ 1 + ln(output price) + ln(context) over MMLU-scored models the catalogue prices."""
    catalogue = load_catalogue()
    xs, ys = [], []
    for row in rows:
        model = catalogue.get(row.provider, row.model) if row.benchmark == "MMLU" else None
        if model is None or model.output_price <= 0:
            continue
        xs.append([1.0, math.log(model.output_price), math.log(max(model.context_length, 1024))])
        ys.append(to_capability(row.score))
    X, y = np.array(xs), np.array(ys)
    # Small ridge on the slopes keeps the line sane with a dozen points.
    coef = np.linalg.solve(X.T @ X + np.diag([0.0, 0.1, 0.1]), X.T @ y)
    return FallbackLine(
        intercept=round(float(coef[0]), 6),
        per_log_output_price=round(float(coef[1]), 6),
        per_log_context=round(float(coef[2]), 6),
        lower=round(float(y.min()), 6),
        upper=round(float(y.max()), 6),
    )


def fit_imputation(rows: list[FigureRow]) -> dict[str, tuple[float, float]]:
    """axis -> (intercept, slope) of a least-squares line on knowledge, over the models that have both figures."""
    scores = axis_scores(rows)
    out = {}
    for axis in AXES[1:]:
        pairs = np.array([(s["knowledge"], s[axis]) for s in scores.values() if "knowledge" in s and axis in s])
        slope, intercept = np.polyfit(pairs[:, 0], pairs[:, 1], 1)
        out[axis] = (round(float(intercept), 6), round(float(slope), 6))
    return out


def figures_of(prior: CapabilityPrior, models: list[str]) -> np.ndarray:
    """(models, axes) figures on the capability scale of "provider/model" keys (a missing knowledge figure from a
    family match or the price line, as for any candidate)."""
    out = []
    for key in models:
        provider, model = key.split("/", 1)
        out.append(prior.skills(provider, model, output_price=1.0, context_length=None)[0])
    return np.array(out)


# Figures measured on RouterDC's own files (datasets/model_benchmarks.csv): the 7 open models' accuracy on the very
# prompts a benchmark left out would route, so leaving a benchmark out leaves these out too.
ROUTERDC_SOURCE = "shuhao02/RouterDC"
FIGURE_BENCHMARK = {"mmlu": "MMLU", "gsm8k": "GSM8K", "humaneval": "HumanEval"}


def masked_figures(source: Path, benchmarks: tuple[str, ...], out: Path) -> Path:
    """A copy of the figures file `source` without the rows measured on the RouterDC files of `benchmarks`
    (skill_training.BENCHMARKS names): nothing about a benchmark left out reaches the router."""
    masked = {FIGURE_BENCHMARK[b] for b in benchmarks if b in FIGURE_BENCHMARK}
    with Path(source).open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    kept = [r for r in rows if not (ROUTERDC_SOURCE in r["source_url"] and r["benchmark"] in masked)]
    with Path(out).open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(kept)
    return Path(out)
