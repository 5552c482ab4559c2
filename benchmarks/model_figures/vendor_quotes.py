"""Vendors' launch figures for 2026 models whose own pages could not be reached, read from public pages that quote
them -> rows of datasets/model_benchmarks.csv (data card: datasets/figures_vendor_cards.md, "Quoted figures").

A figure is taken only when two independent pages quote the same number for the same model and benchmark (a
release post's reprint, two copies of a Hugging Face model card, a vendor's launch table retold by two articles);
both pages are cited (source_url the first, source_note the second). The setting:
- `None`: the figure is at the model's API default, and the entry's protocol says why (the model has one setting, or
  the card's setting is the one the vendor's API uses by default);
- `vendor-setting`: the pages do not state the reasoning setting of a reasoning model, so the figure is a variant
  (`<id>:vendor-setting`), never its API-default figure;
- another slug (`reasoning-xhigh`): the vendor's table states a non-default setting; a variant as well.

    python -m benchmarks.model_figures.vendor_quotes
"""

from __future__ import annotations

from benchmarks.model_figures.common import DEFAULT_SETTING, licensed_as, replace_source, variant_name

LICENCE = "vendor's claim, quoted by two public pages (the vendor's page not reached)"
UNSTATED = "the vendor's launch evaluation; the reasoning setting is not stated by the quoting pages"
SETTINGS = {"vendor-setting": UNSTATED,
            "reasoning-xhigh": "reasoning effort xhigh, as the vendor's launch table states (API default: none)",
            "reasoning-max": "thinking effort max ('Think Max'), as the vendor states "
                             "(API default: thinking, effort high)",
            "thinking-high": "thinking level high, as the vendor's table states "
                             "(the API default level differs by model)"}

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
    # xAI's launch figure (August 2025); the model reasons always and takes no reasoning effort: one setting.
    ("xai", "grok-code-fast-1", "SWE-bench-Verified", 70.8, "2025-08-26",
     "https://www.techdevnotes.com/wiki/pages/grok-code-fast-1",
     "https://github.com/orgs/cometapi-dev/discussions/21", None,
     "SWE-bench Verified, xAI's Grok Code Fast 1 launch figure (reasoning always on, no effort setting)"),
    # OpenAI's GPT-5.4 mini and nano release (17 March 2026): the table's columns say "(xhigh)".
    ("openai", "gpt-5.4-mini", "GPQA", 88.0, "2026-03-17",
     "https://pubt.io/view/B3DD377845CE13185BE14C4C82F8CB9639C7F005",
     "https://euno.news/posts/en/introducing-gpt-54-mini-and-nano-cdc206", "reasoning-xhigh",
     "GPQA Diamond, OpenAI's 'Introducing GPT-5.4 mini and nano' table"),
    ("openai", "gpt-5.4-nano", "GPQA", 82.8, "2026-03-17",
     "https://pubt.io/view/B3DD377845CE13185BE14C4C82F8CB9639C7F005",
     "https://euno.news/posts/en/introducing-gpt-54-mini-and-nano-cdc206", "reasoning-xhigh",
     "GPQA Diamond, OpenAI's 'Introducing GPT-5.4 mini and nano' table"),
    ("anthropic", "claude-opus-4-8", "SWE-bench-Verified", 88.6, "2026-05-28", "https://techjacksolutions.com/?p=55247",
     "http://www.kongchang.com/en/articles/deep-dive-into-claude-opus-4-8-the-ai-paradox-of-being-more-honest-yet-"
     "better-at-gaming-tests", "vendor-setting", "SWE-bench Verified, Anthropic's Claude Opus 4.8 launch figure"),
    # Moonshot's Kimi K2.6 model card (huggingface.co/moonshotai/Kimi-K2.6, Modified MIT), read in two copies. The
    # card reports K2.6 "with thinking mode enabled", which Moonshot's API does by default for kimi-k2.6 (thinking is
    # switched off with thinking.type=disabled: https://docs.agno.com/examples/models/moonshot/thinking-mode).
    ("moonshot", "kimi-k2.6", "SWE-bench-Verified", 80.2, "2026-04-20",
     "https://cnb.wcchen.cn/ai-models/moonshotai/Kimi-K2.6/-/blob/main/README.md",
     "https://ai.gitcode.com/MoonshotAI/Kimi-K2.6", None,
     "SWE-bench Verified, Kimi K2.6 model card 'Evaluation Results' (thinking mode, the API's default)"),
    ("moonshot", "kimi-k2.6", "LiveCodeBench", 89.6, "2026-04-20",
     "https://cnb.wcchen.cn/ai-models/moonshotai/Kimi-K2.6/-/blob/main/README.md",
     "https://ai.gitcode.com/MoonshotAI/Kimi-K2.6", None,
     "LiveCodeBench (v6), Kimi K2.6 model card 'Evaluation Results' (thinking mode, the API's default)"),
    # DeepSeek's V4 launch figures (24 April 2026) are its 'Max' effort; DeepSeek's API enables thinking by default at
    # effort high (https://api-docs.deepseek.com/guides/thinking_mode.md), so these are variants.
    ("deepseek", "deepseek-v4-pro", "GPQA", 90.1, "2026-04-24", "https://together.ai/models/deepseek-v4-pro",
     "https://voidsource.dev/ai/llm/deepseek-v4", "reasoning-max", "GPQA Diamond, DeepSeek-V4-Pro-Max (model card)"),
    ("deepseek", "deepseek-v4-pro", "SWE-bench-Verified", 80.6, "2026-04-24",
     "https://together.ai/models/deepseek-v4-pro",
     "https://www.besthub.dev/articles/deepseek-v4-launch-open-source-model-beats-closed-source-leaders-in-coding-math-"
     "1-6-t-params-1-m-context-0a228d643703", "reasoning-max", "SWE-bench Verified, DeepSeek-V4-Pro-Max (model card)"),
    ("deepseek", "deepseek-v4-pro", "LiveCodeBench", 93.5, "2026-04-24", "https://together.ai/models/deepseek-v4-pro",
     "https://www.besthub.dev/articles/deepseek-v4-launch-open-source-model-beats-closed-source-leaders-in-coding-math-"
     "1-6-t-params-1-m-context-0a228d643703", "reasoning-max", "LiveCodeBench, DeepSeek-V4-Pro-Max (model card)"),
    ("deepseek", "deepseek-v4-flash", "SWE-bench-Verified", 79.0, "2026-04-24",
     "https://voidsource.dev/ai/llm/deepseek-v4",
     "https://www.continuumlabs.ai/inference/models", "reasoning-max",
     "SWE-bench Verified, DeepSeek-V4-Flash at its maximum reasoning effort (model card)"),
    # Google's Gemini 3.1 Flash-Lite page (deepmind.google/models/gemini/flash-lite/, March 2026) reports it at thinking
    # level High; Gemini 3.x Flash models default to lower levels, so a variant.
    ("google", "gemini-3.1-flash-lite", "GPQA", 86.9, "2026-03-03",
     "https://robotsatlas.com/modele-ai/gemini-31-flash-lite",
     "https://allabouttalking.com/gemini-3-1-flash-lite-built-for-intelligence-at-scale-2/", "thinking-high",
     "GPQA Diamond, Google's Gemini 3.1 Flash-Lite launch table ('Gemini 3.1 Flash-Lite High', no tools)"),
    # Mistral's coding and reasoning models. Devstral models do not reason (one setting); Magistral models always reason
    # (one setting). Devstral 2 is 'mistralai/devstral-2512' (https://sg.langmart.ai/model-docs/models/
    # mistralai_devstral-2-2512-free.html); Devstral Small 1.1 is devstral-small-2507 (the first page's canonical slug).
    ("mistral", "devstral-2512", "SWE-bench-Verified", 72.2, "2025-12-09",
     "https://www.gen.qa/devstral-2-swe-bench-cline-human-eval/", "https://awesomeagents.ai/models/devstral-2/", None,
     "SWE-bench Verified, Mistral's Devstral 2 launch figure (OpenHands scaffold)"),
    ("mistral", "devstral-small-2507", "SWE-bench-Verified", 53.6, "2025-07-10",
     "https://nnzen.com/models/mistralai/devstral-small",
     "https://neuralhub.xyz/dashboard/models/mistralai/devstral-small",
     None, "SWE-bench Verified, Mistral's Devstral Small 1.1 figure (the provider's model description)"),
    ("mistral", "magistral-medium-2506", "AIME-2024", 73.6, "2025-06-10",
     "https://chatforest.com/reviews/mistral-magistral-medium-api-reasoning-llm-review/",
     "https://vercel.com/ai-gateway/models/magistral-medium", None,
     "AIME 2024 pass@1, Mistral's Magistral Medium (1.0) launch figure"),
    ("mistral", "magistral-medium-2506", "GPQA", 70.8, "2025-06-10",
     "https://chatforest.com/reviews/mistral-magistral-medium-api-reasoning-llm-review/",
     "https://topreviewed.ai/models/magistral-medium-1-2", None,
     "GPQA Diamond (70.83), Mistral's Magistral Medium (1.0) launch figure"),
    # Mistral Medium 3.5 takes a reasoning effort (none/high); the pages do not say which the figure used.
    ("mistral", "mistral-medium-3.5", "SWE-bench-Verified", 77.6, "2026-04-29",
     "https://awesomeagents.ai/models/mistral-medium-3-5/",
     "https://chatforest.com/reviews/mistral-medium-3-5-dense-128b-agentic-llm-review/", "vendor-setting",
     "SWE-bench Verified, Mistral's Medium 3.5 launch figure"),
    # Qwen's Qwen3.5-9B figure (February/March 2026); Qwen3.5 reasons by default (the first page says so).
    ("qwen", "Qwen3.5-9B", "GPQA", 81.7, "2026-03-02", "https://crafiq.ai/models/language/alibaba-qwen3-5-9b",
     "https://apxml.com/models/qwen35-9b", None,
     "GPQA Diamond, Qwen's Qwen3.5-9B release figure (thinking mode, the model's default)"),
]


def rows() -> list[dict[str, str]]:
    return [dict(provider=provider, model=variant_name(model, slug), benchmark=benchmark, score=f"{score:.1f}",
                 protocol=protocol, source_url=first, source_note=f"the same figure quoted by {second}",
                 date=date, setting=SETTINGS[slug] if slug else DEFAULT_SETTING, licence=LICENCE)
            for provider, model, benchmark, score, date, first, second, slug, protocol in ENTRIES]


owns = licensed_as(LICENCE)


def main() -> None:
    removed, added, skipped = replace_source(rows(), owns)
    print(f"vendor quotes: removed {removed} rows, added {added}, skipped {skipped} (another source)")


if __name__ == "__main__":
    main()
