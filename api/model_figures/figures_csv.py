"""Reading and checking a figures CSV in datasets/model_benchmarks.csv's format, before anything is swapped in.

A file an operator names (SWITCHBOARD_MODEL_FIGURES_SOURCE, the refresh-model-figures flow) is refused whole at its
first problem, with the line and what is wrong: a missing column, an empty provider or model, a benchmark the router
does not read (a typo would silently drop a model's figures), a score that is not a percentage, a row without its
source, or a file whose figures leave an axis without any model."""

from __future__ import annotations

import csv
import io
import math
from functools import lru_cache

from api.routing.axes import SCORE_RANGE
from api.routing.capability import AXES, AXIS_BENCHMARKS, PROXY_BENCHMARKS, FigureRow, read_figures
from api.shipped import shipped

COLUMNS = ("provider", "model", "benchmark", "score", "protocol", "source_url", "source_note")
MAX_BYTES = 20 * 1024 * 1024
MAX_ROWS = 200_000


@lru_cache(maxsize=1)
def known_benchmarks() -> frozenset[str]:
    """The benchmarks the router maps onto its axes, and any other the shipped file carries (a refresh may always
    send the shipped file back)."""
    mapped = {b for table in (AXIS_BENCHMARKS, PROXY_BENCHMARKS) for names in table.values() for b in names}
    return frozenset(mapped | {r.benchmark for r in read_figures(shipped("model_benchmarks.csv"))})


class InvalidFigures(ValueError):
    """What is wrong with a figures file, for the operator (no path or content beyond the offending line number)."""


def parse_figures(text: str) -> list[FigureRow]:
    """The file's rows, checked; raises InvalidFigures at the first problem."""
    if len(text.encode("utf-8")) > MAX_BYTES:
        raise InvalidFigures(f"the figures file is larger than {MAX_BYTES // (1024 * 1024)} MiB")
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise InvalidFigures(f"the figures file lacks the column(s) {', '.join(missing)} "
                             f"(expected datasets/model_benchmarks.csv's header: {','.join(COLUMNS)})")
    rows: list[FigureRow] = []
    for record in reader:
        line = reader.line_num
        if len(rows) >= MAX_ROWS:
            raise InvalidFigures(f"the figures file has more than {MAX_ROWS} rows")
        rows.append(_row(record, line))
    if not rows:
        raise InvalidFigures("the figures file has no rows")
    _check_coverage(rows)
    return rows


def _row(record: dict, line: int) -> FigureRow:
    provider, model = (record.get("provider") or "").strip().lower(), (record.get("model") or "").strip().lower()
    benchmark, source = (record.get("benchmark") or "").strip(), (record.get("source_url") or "").strip()
    if not provider or not model:
        raise InvalidFigures(f"line {line}: provider and model must not be empty")
    if benchmark not in known_benchmarks():
        raise InvalidFigures(f"line {line}: unknown benchmark {benchmark[:40]!r}; the router reads "
                             f"{', '.join(sorted(known_benchmarks()))}")
    try:
        score = float(record.get("score") or "")
    except ValueError:
        raise InvalidFigures(f"line {line}: score {str(record.get('score'))[:20]!r} is not a number") from None
    low, high = SCORE_RANGE.get(benchmark, (0.0, 100.0))  # an index (ECI, Arena Elo) has its own scale
    if not math.isfinite(score) or not low <= score <= high:
        scale = "a percentage" if (low, high) == (0.0, 100.0) else f"on {benchmark}'s scale"
        raise InvalidFigures(f"line {line}: score {score} is not {scale} ({low:g} to {high:g})")
    if not source:
        raise InvalidFigures(f"line {line}: every figure needs its source_url")
    return FigureRow(provider, model, benchmark, score, source)


def _check_coverage(rows: list[FigureRow]) -> None:
    """Every axis needs models with figures on it, or the uncertain prior has nothing to be a quantile of."""
    benchmarks = {r.benchmark for r in rows}
    for axis in AXES:
        if not benchmarks & set(AXIS_BENCHMARKS[axis] + PROXY_BENCHMARKS[axis]):
            raise InvalidFigures(f"the figures file gives no model a figure on the {axis} axis "
                                 f"({', '.join(AXIS_BENCHMARKS[axis] + PROXY_BENCHMARKS[axis])})")
