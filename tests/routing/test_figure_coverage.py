"""Which catalogue text models the shipped figures cover (issue 32), read through GET /v2/models as a user sees them.

The issue's target is 90 % of the catalogue's text models and every model of the 10 largest providers; what the
public sources reached is far less (most of today's catalogue are 2026 models with no licensed per-benchmark figures:
docs/routing.md, "Where figures come from"). The floors below are what the shipped data reach, so losing a source
fails here; the named models are the ones a team routes between today.
"""

from __future__ import annotations

import csv
import datetime
from pathlib import Path

from api.routing import coverage
from api.shipped import shipped
from api.routing.coverage import COVERED, FigureIndex, classify, read_aliases

# The date docs/routing.md's coverage table is printed for (deprecations depend on it).
DOC_DATE = datetime.date(2026, 11, 27)
# Share of active catalogue models covered (own figures, another snapshot or sibling, an explicit alias).
COVERED_FLOOR = 0.43
# Models of today that must have figures of their own (or of the snapshot their alias names).
TODAYS_MODELS = [
    ("openai", "gpt-5"), ("openai", "gpt-5-mini"), ("openai", "gpt-5-nano"), ("openai", "gpt-4o-mini"),
    ("openai", "gpt-4.1"), ("openai", "gpt-4.1-mini"), ("openai", "o3"), ("openai", "gpt-5.1"), ("openai", "gpt-5.2"),
    ("openai", "gpt-5.4"),
    ("anthropic", "claude-opus-4-5"), ("anthropic", "claude-opus-4-6"), ("anthropic", "claude-sonnet-4-5"),
    ("anthropic", "claude-sonnet-4-6"), ("anthropic", "claude-haiku-4-5"),
    ("google", "gemini-2.5-pro"), ("google", "gemini-2.5-flash"), ("google", "gemini-3-pro-preview"),
    ("google", "gemini-3-flash-preview"), ("google", "gemini-3.1-pro-preview"),
    ("deepseek", "deepseek-reasoner"), ("deepseek", "deepseek-chat"), ("deepseek", "deepseek-v3.2"),
    ("mistral", "mistral-small-latest"), ("mistral", "mistral-large-latest"), ("zai", "glm-4.7"), ("zai", "glm-5"),
    ("moonshot", "kimi-k2.5"),
]


def listed_models(client) -> list[tuple[str, str]]:
    response = client.get("/v2/models")
    assert response.status_code == 200, response.text
    return [(m["provider"], m["model"]) for m in response.json()["models"]]


def test_the_catalogue_coverage_floor_holds_and_todays_models_have_figures(client):
    classified = classify(listed_models(client), FigureIndex(coverage.figure_models()), read_aliases())
    covered = sum(how in COVERED for how in classified.values())
    assert len(classified) >= 150
    assert covered / len(classified) >= COVERED_FLOOR, coverage.markdown(classified)
    missing = [key for key in TODAYS_MODELS if key in classified and classified[key] not in COVERED]
    assert not missing, missing
    assert sum(key in classified for key in TODAYS_MODELS) >= len(TODAYS_MODELS) - 3  # the catalogue lists them
    rows = coverage.table(classified)
    assert sum(n for _, n, _ in rows) == len(classified)
    assert all(sum(counts.values()) == n for _, n, counts in rows)


def test_a_thinking_variant_never_stands_for_its_base_model():
    index = FigureIndex(["claude-opus-4-5-20251101:thinking-32k", "gpt-5.2-2025-12-11:reasoning-high"])
    assert index.how("claude-opus-4-5") == "variant"
    assert index.how("gpt-5.2") == "variant"
    assert classify([("anthropic", "claude-opus-4-5")], index, {}) == {("anthropic", "claude-opus-4-5"): "variant"}


def test_levels_own_snapshot_alias_none():
    index = FigureIndex(["gpt-5-2025-08-07", "mistral-medium-2505", "gemini-3.1-pro-preview"])
    aliases = {("google", "gemini-pro-latest"): coverage.Alias("google", "gemini-pro-latest", "gemini-3.1-pro-preview",
                                                               "https://example.org/alias"),
               ("google", "gemini-flash-latest"): coverage.Alias("google", "gemini-flash-latest", "no-such-model",
                                                                 "https://example.org/alias")}
    got = classify([("openai", "GPT-5-2025-08-07"), ("openai", "gpt-5"), ("mistral", "mistral-medium-latest"),
                    ("google", "gemini-pro-latest"), ("google", "gemini-flash-latest")], index, aliases)
    assert got == {("openai", "GPT-5-2025-08-07"): "own", ("openai", "gpt-5"): "snapshot",
                   ("mistral", "mistral-medium-latest"): "snapshot", ("google", "gemini-pro-latest"): "alias",
                   ("google", "gemini-flash-latest"): "none"}  # an alias to a model without figures covers nothing


def test_every_alias_names_a_model_with_figures_and_a_source():
    index = FigureIndex(coverage.figure_models())
    for alias in read_aliases().values():
        assert index.how(alias.base_model) in ("own", "snapshot"), alias
        assert alias.source_url.startswith("https://"), alias


def test_every_figure_row_records_its_date_setting_and_licence():
    with shipped("model_benchmarks.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for r in rows:
        assert len(r["date"]) == 10 and r["date"][4] == "-" and r["setting"] and r["licence"], r
        base, _, setting = r["model"].partition(coverage.SETTING_SEPARATOR)
        # a variant's row says which setting it measured, and a default-setting row is not named as a variant
        assert bool(setting) == (not r["setting"].startswith("API default") and "model-level" not in r["setting"]), r


def test_docs_quote_the_coverage_table_the_data_give():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "routing.md").read_text(encoding="utf-8")
    table = coverage.markdown(coverage.catalogue_classification(DOC_DATE))
    assert table in doc, f"regenerate with: python -m api.routing.coverage --today {DOC_DATE}\n{table}"


def test_every_shipped_alias_cites_a_page_and_reaches_figures():
    index = FigureIndex(coverage.figure_models())
    aliases = read_aliases()
    assert aliases
    for alias in aliases.values():
        assert alias.source_url.startswith("https://"), alias
        assert index.how(alias.base_model) in ("own", "snapshot"), alias  # an alias to nothing would cover nothing
