"""Vendors' launch figures for 2026 models whose own pages could not be reached, read from public pages that quote
them -> rows of datasets/model_benchmarks.csv (data card: datasets/figures_vendor_cards.md, "Quoted figures").

A figure is taken only when two independent pages quote the same number for the same model and benchmark; both
pages are cited (source_url the first, source_note the second). The quoting pages do not state the reasoning setting
the vendor measured at, so a reasoning model's figure is filed as a variant (`<id>:vendor-setting`), never as its
API-default figure.

    python -m benchmarks.model_figures.vendor_quotes
"""

from __future__ import annotations

from benchmarks.model_figures.common import DEFAULT_SETTING, replace_source, variant_name

LICENCE = "vendor's claim, quoted by two public pages (the vendor's page not reached)"
UNSTATED = "the vendor's launch evaluation; the reasoning setting is not stated by the quoting pages"

# (provider, model, benchmark, score, date, first page, second page, setting slug or None, protocol)
ENTRIES = [
    ("openai", "gpt-5.5", "GPQA", 93.6, "2026-04-23",
     "https://www.besthub.dev/articles/gpt-5-5-deep-dive-what-makes-this-true-generational-leap-stand-out-d6f98b4fe848",
     "https://neodrop.ai/zh-cn/feed/7V0jD5GerUR", "vendor-setting", "GPQA Diamond, OpenAI's launch table"),
    ("anthropic", "claude-opus-4-7", "SWE-bench-Verified", 87.6, "2026-04-16",
     "https://allthings.how/claude-opus-4-7-system-card-key-findings-and-benchmarks/",
     "https://spoonai.me/blog/2026-04-16-opus-4-7-system-card-findings-en", "vendor-setting",
     "SWE-bench Verified, Anthropic's Claude Opus 4.7 system card"),
    ("mistral", "mistral-large-2512", "GPQA", 43.9, "2025-12-02",
     "https://awesomeagents.ai/models/mistral-large-3",
     "https://chatforest.com/reviews/mistral-large-3-open-weight-moe-llm-review/", None,
     "GPQA Diamond, Mistral's Mistral Large 3 launch figures (a non-reasoning model: one setting)"),
]


def rows() -> list[dict[str, str]]:
    return [dict(provider=provider, model=variant_name(model, slug), benchmark=benchmark, score=f"{score:.1f}",
                 protocol=protocol, source_url=first, source_note=f"the same figure quoted by {second}",
                 date=date, setting=UNSTATED if slug else DEFAULT_SETTING, licence=LICENCE)
            for provider, model, benchmark, score, date, first, second, slug, protocol in ENTRIES]


def owns(row: dict[str, str]) -> bool:
    return row["licence"] == LICENCE


def main() -> None:
    removed, added, skipped = replace_source(rows(), owns)
    print(f"vendor quotes: removed {removed} rows, added {added}, skipped {skipped} (another source)")


if __name__ == "__main__":
    main()
