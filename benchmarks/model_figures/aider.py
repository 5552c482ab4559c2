"""Aider's polyglot leaderboard -> rows of datasets/model_benchmarks.csv (data card: datasets/figures_aider.md).

Aider-AI/aider (Apache-2.0) keeps every run of its polyglot benchmark (225 Exercism exercises in six languages,
two tries) in `aider/website/_data/polyglot_leaderboard.yml`; `pass_rate_2` is the share solved. Its `model` labels
are display names, so the API id each run called is written out below from the run's `command` and label (only runs
of a single model a catalogue can name; architect pairs, anonymous previews and moving aliases are left out).

    python -m benchmarks.model_figures.aider /path/to/git-dir <commit>
"""

from __future__ import annotations

from pathlib import Path

import yaml

from benchmarks.model_figures.common import DEFAULT_SETTING, git, licensed_as, mirror_command, \
    reaches_trained_model, variant_name

REPO = "Aider-AI/aider"
PATH = "aider/website/_data/polyglot_leaderboard.yml"
LICENCE = "Apache-2.0 (Aider-AI/aider polyglot leaderboard)"
PROTOCOL = "Aider polyglot: 225 Exercism exercises (C++, Go, Java, JS, Python, Rust), 2 tries, aider's edit format"
# Aider's label -> (provider, model as its API or Hugging Face repo names it, setting slug or None, setting words)
RUNS = {
    "gpt-5 (medium)": ("openai", "gpt-5", None, "API default (reasoning effort medium)"),
    "gpt-5 (high)": ("openai", "gpt-5", "reasoning-high", "reasoning effort high"),
    "gpt-5 (low)": ("openai", "gpt-5", "reasoning-low", "reasoning effort low"),
    "o3": ("openai", "o3", None, "API default (reasoning effort medium)"),
    "o3 (high)": ("openai", "o3", "reasoning-high", "reasoning effort high"),
    "o3-pro (high)": ("openai", "o3-pro", "reasoning-high", "reasoning effort high"),
    "o4-mini (high)": ("openai", "o4-mini", "reasoning-high", "reasoning effort high"),
    "o3-mini (medium)": ("openai", "o3-mini", None, "API default (reasoning effort medium)"),
    "o3-mini (high)": ("openai", "o3-mini", "reasoning-high", "reasoning effort high"),
    "o1-2024-12-17 (high)": ("openai", "o1-2024-12-17", "reasoning-high", "reasoning effort high"),
    "o1-mini-2024-09-12": ("openai", "o1-mini-2024-09-12", None, DEFAULT_SETTING),
    "gpt-4.1": ("openai", "gpt-4.1", None, DEFAULT_SETTING),
    "gpt-4.1-mini": ("openai", "gpt-4.1-mini", None, DEFAULT_SETTING),
    "gpt-4.1-nano": ("openai", "gpt-4.1-nano", None, DEFAULT_SETTING),
    "gpt-4.5-preview": ("openai", "gpt-4.5-preview", None, DEFAULT_SETTING),
    "gpt-4o-2024-11-20": ("openai", "gpt-4o-2024-11-20", None, DEFAULT_SETTING),
    "gpt-4o-2024-08-06": ("openai", "gpt-4o-2024-08-06", None, DEFAULT_SETTING),
    "gpt-4o-mini-2024-07-18": ("openai", "gpt-4o-mini-2024-07-18", None, DEFAULT_SETTING),
    "gpt-oss-120b (high)": ("openai", "gpt-oss-120b", "reasoning-high", "reasoning effort high"),
    "claude-3-5-sonnet-20241022": ("anthropic", "claude-3-5-sonnet-20241022", None, DEFAULT_SETTING),
    "claude-3-5-haiku-20241022": ("anthropic", "claude-3-5-haiku-20241022", None, DEFAULT_SETTING),
    "claude-3-7-sonnet-20250219 (no thinking)": ("anthropic", "claude-3-7-sonnet-20250219", None, DEFAULT_SETTING),
    "claude-3-7-sonnet-20250219 (32k thinking tokens)": ("anthropic", "claude-3-7-sonnet-20250219", "thinking-32k",
                                                         "extended thinking, 32K token budget"),
    "claude-sonnet-4-20250514 (no thinking)": ("anthropic", "claude-sonnet-4-20250514", None, DEFAULT_SETTING),
    "claude-sonnet-4-20250514 (32k thinking)": ("anthropic", "claude-sonnet-4-20250514", "thinking-32k",
                                                "extended thinking, 32K token budget"),
    "claude-opus-4-20250514 (no think)": ("anthropic", "claude-opus-4-20250514", None, DEFAULT_SETTING),
    "claude-opus-4-20250514 (32k thinking)": ("anthropic", "claude-opus-4-20250514", "thinking-32k",
                                              "extended thinking, 32K token budget"),
    "Gemini 2.5 Pro Preview 03-25": ("google", "gemini-2.5-pro-preview-03-25", None, DEFAULT_SETTING),
    "Gemini 2.5 Pro Preview 05-06": ("google", "gemini-2.5-pro-preview-05-06", None, DEFAULT_SETTING),
    "gemini-2.5-pro-preview-06-05 (default think)": ("google", "gemini-2.5-pro-preview-06-05", None,
                                                     "API default (dynamic thinking)"),
    "gemini-2.5-pro-preview-06-05 (32k think)": ("google", "gemini-2.5-pro-preview-06-05", "thinking-32k",
                                                 "thinking budget 32K tokens"),
    "gemini-2.5-flash-preview-04-17 (default)": ("google", "gemini-2.5-flash-preview-04-17", None,
                                                 "API default (dynamic thinking)"),
    "gemini-2.5-flash-preview-05-20 (no think)": ("google", "gemini-2.5-flash-preview-05-20", "thinking-0",
                                                  "thinking budget 0 (off)"),
    "gemini-2.5-flash-preview-05-20 (24k think)": ("google", "gemini-2.5-flash-preview-05-20", "thinking-24k",
                                                   "thinking budget 24K tokens"),
    "gemini-exp-1206": ("google", "gemini-exp-1206", None, DEFAULT_SETTING),
    "gemini-2.0-flash-exp": ("google", "gemini-2.0-flash-exp", None, DEFAULT_SETTING),
    "Gemini 2.0 Pro exp-02-05": ("google", "gemini-2.0-pro-exp-02-05", None, DEFAULT_SETTING),
    "gemini-2.0-flash-thinking-exp-01-21": ("google", "gemini-2.0-flash-thinking-exp-01-21", None, DEFAULT_SETTING),
    "gemma-3-27b-it": ("google", "gemma-3-27b-it", None, DEFAULT_SETTING),
    "DeepSeek R1": ("deepseek", "DeepSeek-R1", None, DEFAULT_SETTING),
    "DeepSeek R1 (0528)": ("deepseek", "DeepSeek-R1-0528", None, DEFAULT_SETTING),
    "DeepSeek V3 (0324)": ("deepseek", "DeepSeek-V3-0324", None, DEFAULT_SETTING),
    "DeepSeek Chat V3 (prev)": ("deepseek", "DeepSeek-V3", None, DEFAULT_SETTING),
    "DeepSeek Chat V2.5": ("deepseek", "DeepSeek-V2.5", None, DEFAULT_SETTING),
    "DeepSeek-V3.2-Exp (Chat)": ("deepseek", "DeepSeek-V3.2-Exp", None, "API default (non-thinking mode, deepseek-chat)"),
    "DeepSeek-V3.2-Exp (Reasoner)": ("deepseek", "DeepSeek-V3.2-Exp", "thinking", "thinking mode (deepseek-reasoner)"),
    "Grok 3 Beta": ("xai", "grok-3-beta", None, DEFAULT_SETTING),
    "Grok 3 Mini Beta (low)": ("xai", "grok-3-mini-beta", "reasoning-low", "reasoning effort low"),
    "Grok 3 Mini Beta (high)": ("xai", "grok-3-mini-beta", "reasoning-high", "reasoning effort high"),
    "grok-4 (high)": ("xai", "grok-4-0709", "reasoning-high", "reasoning effort high (as aider labels the run)"),
    "Llama 4 Maverick": ("meta", "Llama-4-Maverick-17B-128E-Instruct", None, DEFAULT_SETTING),
    "Qwen3 32B": ("qwen", "Qwen3-32B", None, DEFAULT_SETTING),
    "Qwen3 235B A22B diff, no think, Alibaba API": ("qwen", "Qwen3-235B-A22B", "no-thinking", "thinking off"),
    "QwQ-32B": ("qwen", "QwQ-32B", None, DEFAULT_SETTING),
    "Qwen2.5-Coder-32B-Instruct": ("qwen", "Qwen2.5-Coder-32B-Instruct", None, DEFAULT_SETTING),
    "qwen-max-2025-01-25": ("qwen", "qwen-max-2025-01-25", None, DEFAULT_SETTING),
    "Kimi K2": ("moonshot", "Kimi-K2-Instruct", None, DEFAULT_SETTING),
    "command-a-03-2025-quality": ("cohere", "command-a-03-2025", None, DEFAULT_SETTING),
    "Codestral 25.01": ("mistral", "codestral-2501", None, DEFAULT_SETTING),
    "yi-lightning": ("01-ai", "yi-lightning", None, DEFAULT_SETTING),
}


def rows_from(git_dir: Path, commit: str) -> list[dict[str, str]]:
    text = git(git_dir, "show", f"{commit}:{PATH}")
    out = []
    for run in yaml.safe_load(text):
        found = RUNS.get(run["model"])
        if found is None:
            continue
        provider, model, slug, setting = found
        if reaches_trained_model(model):
            continue
        out.append(dict(
            provider=provider, model=variant_name(model, slug), benchmark="Aider-Polyglot",
            score=f"{float(run['pass_rate_2']):.1f}", protocol=f"{PROTOCOL} ({run.get('edit_format', '?')})",
            source_url=f"https://github.com/{REPO}/blob/{commit}/{PATH}",
            source_note=f"aider run '{run['dirname']}', label '{run['model']}', command '{run['command']}'",
            date=str(run["date"]), setting=setting, licence=LICENCE))
    return out


owns = licensed_as(LICENCE)


def main() -> None:
    mirror_command("aider", __doc__, owns, lambda args, commit: rows_from(args.git_dir, commit))


if __name__ == "__main__":
    main()
