"""Vendors' published benchmark tables as transcribed, each value with the vendor's page cited, by the public dataset
TabNahida/AInsights (`data/benchmarks/benchmark_scores.json`) -> rows of datasets/model_benchmarks.csv (data card:
datasets/figures_vendor_cards.md, "Transcribed vendor tables").

The dataset keeps each release table's values with the vendor's URL. Only what `PICKS` names is taken: a vendor's own
model from the vendor's own source (never a competitor's column of a vendor's table, which is the vendor's run of
someone else's model), only the benchmarks the CSV names, and each model at the setting the vendor states: the API
default keeps the model's id, any other setting is a variant `<id>:<setting>` (common.py). `source_url` is the
vendor's page; `source_note` names the dataset file at its commit.

    python -m benchmarks.model_figures.transcribed <git-dir> <commit>
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from benchmarks.model_figures.common import DEFAULT_SETTING, git, licensed_as, mirror_command, variant_name

REPO = "TabNahida/AInsights"
PATH = "data/benchmarks/benchmark_scores.json"
LICENCE = (f"vendor publication (factual figure, cited); transcribed by {REPO} "
           "(GPL-3.0 repository, the figure is the vendor's)")
BENCHMARKS = {"gpqa-diamond": ("GPQA", "GPQA Diamond"),
              "swe-bench-verified": ("SWE-bench-Verified", "SWE-bench Verified"),
              "livecodebench": ("LiveCodeBench", "LiveCodeBench"), "aime-2025": ("AIME-2025", "AIME 2025"),
              "aime-2024": ("AIME-2024", "AIME 2024")}
THINKING_DEFAULT_DEEPSEEK = ("API default: thinking at effort high "
                             "(https://api-docs.deepseek.com/guides/thinking_mode.md); the vendor's 'High' column")
UNSTATED = "the vendor's launch table; the reasoning setting is not stated for this column"


@dataclass(frozen=True)
class Pick:
    provider: str
    model: str  # the id the provider's API takes
    source_id: str  # the vendor's own source in the dataset
    setting_slug: str | None  # None: the API default
    setting: str


# dataset model name -> what to take (the vendor's setting and why it is, or is not, the API default)
PICKS = {
    "DeepSeek V4 Pro (High)": Pick("deepseek", "deepseek-v4-pro", "deepseek-v4-pro-card", None,
                                   THINKING_DEFAULT_DEEPSEEK),
    "DeepSeek V4 Flash (High)": Pick("deepseek", "deepseek-v4-flash", "deepseek-v4-pro-card", None,
                                     THINKING_DEFAULT_DEEPSEEK),
    "Kimi K2.6": Pick("moonshot", "kimi-k2.6", "kimi-k2-6-card", None,
                      "API default: thinking enabled, the card's setting"),
    "Kimi K3": Pick("moonshot", "kimi-k3", "kimi-k3-release", None,
                    "API default: kimi-k3 always reasons at default effort max, which the release table uses "
                    "(https://docs.rs/synaps-engine/0.7.0/src/agent_engine/runtime/openai/catalog/kimi.rs.html)"),
    "MiniMax-M2.7": Pick("minimax", "MiniMax-M2.7", "minimax-m2-7-report", None,
                         "API default: thinking enabled by default "
                         "(https://docs.sglang.io/cookbook/autoregressive/MiniMax/MiniMax-M2.7)"),
    "GLM-5.1": Pick("zai", "glm-5.1", "zai-glm-5-1-card", None,
                    "API default: thinking, which Z.ai's GLM API enables by default "
                    "(https://docs.z.ai/guides/llm/glm-4.5)"),
    "GLM-5.2 (max)": Pick("zai", "glm-5.2", "zai-glm-5-2-card", "reasoning-max",
                          "reasoning effort max, as the vendor's table states"),
    "Qwen3.6 Plus": Pick("qwen", "Qwen3.6-Plus", "qwen-qwen3-6-plus-release", "vendor-setting", UNSTATED),
    "Inkling": Pick("thinkingmachines", "Inkling", "thinking-machines-inkling-small-release", "effort-0.99",
                    "effort 0.99 and temperature 1.0, as the vendor states"),
    "GPT-5.6 Sol (max)": Pick("openai", "gpt-5.6-sol", "openai-gpt-5-6-release", "vendor-setting", UNSTATED),
    "GPT-5.6 Terra (max)": Pick("openai", "gpt-5.6-terra", "openai-gpt-5-6-release", "vendor-setting", UNSTATED),
    "GPT-5.6 Luna (max)": Pick("openai", "gpt-5.6-luna", "openai-gpt-5-6-release", "vendor-setting", UNSTATED),
}


def rows_from(data: dict, commit: str) -> list[dict[str, str]]:
    """CSV rows from the dataset's JSON: only `PICKS`, from the vendor's own source, on the CSV's benchmarks."""
    sources = {s["id"]: s for s in data["sources"]}
    date = data.get("generatedAt", "")[:10]
    note = f"{REPO}@{commit[:7]}:{PATH}"
    out = []
    for result in data["results"]:
        pick = PICKS.get(result["model"])
        if pick is None or result["sourceId"] != pick.source_id or result["benchmarkId"] not in BENCHMARKS:
            continue
        benchmark, label = BENCHMARKS[result["benchmarkId"]]
        source = sources[pick.source_id]
        out.append(dict(provider=pick.provider, model=variant_name(pick.model, pick.setting_slug),
                        benchmark=benchmark, score=f"{float(result['value']):.1f}",
                        protocol=f"{label}, the vendor's published figure ({source['label']})",
                        source_url=source["url"], source_note=f"value '{result['model']}' as transcribed in {note}",
                        date=date, setting=pick.setting if pick.setting_slug else f"{DEFAULT_SETTING} ({pick.setting})",
                        licence=LICENCE))
    return out


def read_snapshot(git_dir: Path, commit: str) -> dict:
    return json.loads(git(git_dir, "show", f"{commit}:{PATH}"))


owns = licensed_as(LICENCE)


def main() -> None:
    mirror_command("transcribed vendor tables", __doc__, owns,
                   lambda args, commit: rows_from(read_snapshot(args.git_dir, commit), commit))


if __name__ == "__main__":
    main()
