"""Which catalogue models have public figures (datasets/model_benchmarks.csv), and how they reach them.

A model is covered when the figures hold, at the model's API default setting:
- `own`: rows under its own name, as the provider's API spells it or spelt otherwise (case, separators, an `org/`
  prefix, a vendor word: api/routing/model_names.py, spelling level);
- `snapshot`: rows of another snapshot of the same model (a dated id for an alias, `-latest`, `-preview`: the
  snapshot level), or of its base/chat sibling (the variant level);
- `alias`: rows of the model an explicit entry of datasets/model_aliases.csv names, each with the vendor's page that
  says so (for the aliases the name rules cannot see: `gemini-pro-latest`, `mistral-large-latest`, ...).
Not covered: `variant` (only a reasoning or thinking setting other than the API default was measured: rows named
`<id>:<setting>`, kept apart on purpose), or `none`.

`python -m api.routing.coverage --today 2026-11-27` prints the table docs/routing.md quotes (a test keeps them equal).
"""

from __future__ import annotations

import argparse
import csv
import datetime
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from api.routing import model_names
from api.shipped import shipped

COVERED = ("own", "snapshot", "alias")
HOW = COVERED + ("variant", "none")
SETTING_SEPARATOR = ":"


@dataclass(frozen=True)
class Alias:
    provider: str
    model: str
    base_model: str
    source_url: str


def read_aliases(path: Path | None = None) -> dict[tuple[str, str], Alias]:
    """(provider, model) -> the model whose figures stand for it (lower case keys); datasets/model_aliases.csv by
    default."""
    path = path or shipped("model_aliases.csv")
    with path.open(newline="", encoding="utf-8") as f:
        return {(r["provider"].strip().lower(), r["model"].strip().lower()):
                Alias(r["provider"].strip(), r["model"].strip(), r["base_model"].strip(), r["source_url"].strip())
                for r in csv.DictReader(f)}


class FigureIndex:
    """The figures' model names by name-rule key, default-setting rows and variants apart."""

    def __init__(self, figure_models: list[str]):
        self._levels = {level: set() for level in model_names.LEVELS}
        self._variants: set[tuple[str, ...]] = set()
        for name in figure_models:
            base, _, setting = name.partition(SETTING_SEPARATOR)
            if setting:
                self._variants.add(model_names.key(base, model_names.SNAPSHOT))
                continue
            for level in model_names.LEVELS:
                self._levels[level].add(model_names.key(name, level))

    def how(self, model: str) -> str | None:
        """'own' | 'snapshot' | 'variant' | None for one name."""
        if model_names.key(model, model_names.SPELLING) in self._levels[model_names.SPELLING]:
            return "own"
        if any(model_names.key(model, level) in self._levels[level] for level in model_names.LEVELS[1:]):
            return "snapshot"
        if model_names.key(model, model_names.SNAPSHOT) in self._variants:
            return "variant"
        return None


def figure_models(path: Path | None = None) -> list[str]:
    """The model names of a figures file (datasets/model_benchmarks.csv by default)."""
    with (path or shipped("model_benchmarks.csv")).open(newline="", encoding="utf-8") as f:
        return sorted({r["model"] for r in csv.DictReader(f)})


def classify(models: list[tuple[str, str]], index: FigureIndex,
             aliases: dict[tuple[str, str], Alias]) -> dict[tuple[str, str], str]:
    """(provider, model) -> one of HOW."""
    out = {}
    for provider, model in models:
        how = index.how(model)
        if how in (None, "variant"):
            alias = aliases.get((provider.lower(), model.lower()))
            if alias is not None and index.how(alias.base_model) in ("own", "snapshot"):
                how = "alias"
        out[(provider, model)] = how or "none"
    return out


def table(classified: dict[tuple[str, str], str]) -> list[tuple[str, int, dict[str, int]]]:
    """(provider, models, count per HOW) per provider, most models first."""
    per: dict[str, Counter] = {}
    for (provider, _), how in classified.items():
        per.setdefault(provider, Counter())[how] += 1
    return sorted(((p, sum(c.values()), {h: c[h] for h in HOW}) for p, c in per.items()),
                  key=lambda row: (-row[1], row[0]))


def largest_providers(classified: dict[tuple[str, str], str], n: int = 10) -> list[str]:
    return [provider for provider, _, _ in table(classified)[:n]]


def markdown(classified: dict[tuple[str, str], str]) -> str:
    lines = ["| provider | models | covered | own | snapshot / sibling | alias | variant only | none |",
             "|---|---|---|---|---|---|---|---|"]
    totals = Counter()
    for provider, n, counts in table(classified):
        covered = sum(counts[h] for h in COVERED)
        totals.update(counts)
        lines.append(f"| {provider} | {n} | {covered} | " + " | ".join(str(counts[h]) for h in HOW) + " |")
    n = sum(totals.values())
    covered = sum(totals[h] for h in COVERED)
    lines.append(f"| **all** | **{n}** | **{covered} ({100 * covered / n:.0f} %)** | "
                 + " | ".join(str(totals[h]) for h in HOW) + " |")
    return "\n".join(lines)


def catalogue_classification(today: datetime.date | None = None) -> dict[tuple[str, str], str]:
    # lazy: the catalogue parses LiteLLM's price map; the classifier itself needs none of it
    from api.catalogue import load_catalogue

    active, _ = load_catalogue(today).list()
    return classify([(m.provider, m.model) for m in active], FigureIndex(figure_models()), read_aliases())


def main() -> None:
    parser = argparse.ArgumentParser(description="Coverage of the catalogue's active text models by public figures.")
    parser.add_argument("--today", type=datetime.date.fromisoformat, default=None,
                        help="the catalogue as of this date (YYYY-MM-DD; default: today)")
    classified = catalogue_classification(parser.parse_args().today)
    print(markdown(classified))
    missing = sorted(f"{p}/{m} ({how})" for (p, m), how in classified.items() if how not in COVERED)
    print(f"\nnot covered ({len(missing)}): " + ", ".join(missing))


if __name__ == "__main__":
    main()
