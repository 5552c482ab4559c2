"""Figures read by hand from vendors' own model cards and technical reports in their public repositories -> rows of
datasets/model_benchmarks.csv (data card: datasets/figures_vendor_cards.md).

Each entry below was read from the file its URL names, at that commit; the vendor ran the evaluation (a vendor's
claim, not independently reproduced). Only the vendor's own models are taken from its tables (a competitor's
column in a vendor's table is the vendor's run of someone else's model), and only benchmarks whose protocol
matches the name the CSV gives it.

    python -m benchmarks.model_figures.vendor_cards
"""

from __future__ import annotations

from benchmarks.model_figures.common import DEFAULT_SETTING, reaches_trained_model, replace_source

LICENCE_PREFIX = "vendor's claim, model card in the vendor's repository"

LLAMA_3_2 = dict(
    url="https://github.com/meta-llama/llama-models/blob/1156e8676f57de65e085abde5b5e6bf79857ae6f/models/llama3_2/"
        "MODEL_CARD.md",
    licence=f"{LICENCE_PREFIX} (meta-llama/llama-models, Llama 3.2 Community License)", date="2024-09-25",
    note="Llama 3.2 model card, 'Instruction Tuned Models' table, Meta's internal evaluations library")
GLM_4_5 = dict(
    url="https://github.com/zai-org/GLM-4.5/blob/bebc6b41d9644bd2d42f67206cdaabf1f77bdbe9/resources/"
        "GLM_4_5_technical_report.pdf",
    licence=f"{LICENCE_PREFIX} (zai-org/GLM-4.5, Apache-2.0)", date="2025-08-09",
    note="GLM-4.5 technical report, Table 4 (reasoning; AIME Avg@32, GPQA Avg@8) and Table 5 (coding)")
GLM_SETTING = "API default (thinking enabled, the vendor's evaluation setting)"
GLM_4_0414 = dict(
    url="https://github.com/THUDM/GLM-4/blob/3f79b543647b792aa167c712cd327475ec423f7b/README.md",
    licence=f"{LICENCE_PREFIX} (THUDM/GLM-4, Apache-2.0)", date="2025-04-14",
    note="GLM-4 README, GLM-4-0414 series tables (instruction following; SWE-bench Verified by agent framework)")
JAMBA_1_5 = dict(
    url="https://github.com/asgaardlab/model-card-reorganization/blob/3a0a6702b42ac2a960774259f4573059561b8dd8/"
        "verified_model_cards/ai21labs@AI21-Jamba-1.5-Mini/2_original_model_card.md",
    licence=f"{LICENCE_PREFIX} (AI21's Jamba 1.5 Mini model card, Jamba Open Model License; read in a verbatim copy)",
    date="2024-08-22", note="AI21 Jamba 1.5 Mini model card, 'Results on common benchmarks'")
QWEN_2_5 = dict(
    url="https://github.com/fredericowieser/Dynamic-Transformers/blob/80a7647d0e77370176e98f1d28a0edd788c500e1/docs/"
        "Qwen_2-5_Paper.md",
    licence=f"{LICENCE_PREFIX} (Qwen2.5 Technical Report, arXiv 2412.15115; read in a verbatim markdown copy)",
    date="2024-12-19", note="Qwen2.5 Technical Report, Table 7 (14B-30B+ instruction-tuned models)")
# Mistral's Ministral 3 card (Hugging Face, Apache-2.0), read in a verbatim copy kept in a public repository; its
# "Benchmark Results" tables give the instruct checkpoints (no reasoning: one setting) and the separate reasoning
# checkpoints (they always reason: one setting).
MINISTRAL_3 = dict(
    url="https://github.com/nerdpudding/llama_cpp/blob/dd378e2932c85d6cfced003d7ba0324f614d5642/models/documentation/"
        "CANDIDATES/README_Ministral-3-14B-Instruct-2512-GGUF.md",
    licence=f"{LICENCE_PREFIX} (Mistral's Ministral 3 model card, Apache-2.0; read in a verbatim copy)",
    date="2025-12-02", note="Ministral 3 model card, 'Benchmark Results': Reasoning and Instruct tables")


# (provider, model, benchmark, score, protocol, source, setting)
ENTRIES = [
    ("meta", "Llama-3.2-1B-Instruct", "GPQA", 27.2, "GPQA, 0-shot, acc", LLAMA_3_2, DEFAULT_SETTING),
    ("meta", "Llama-3.2-1B-Instruct", "MATH", 30.6, "MATH (CoT), 0-shot, final_em", LLAMA_3_2, DEFAULT_SETTING),
    ("meta", "Llama-3.2-3B-Instruct", "GPQA", 32.8, "GPQA, 0-shot, acc", LLAMA_3_2, DEFAULT_SETTING),
    ("meta", "Llama-3.2-3B-Instruct", "MATH", 47.3, "MATH (CoT), 0-shot, final_em", LLAMA_3_2, DEFAULT_SETTING),
    ("zai", "glm-4.5", "GPQA", 79.1, "GPQA Diamond, Avg@8", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5", "AIME-2024", 91.0, "AIME 2024, Avg@32", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5", "LiveCodeBench", 72.9, "LiveCodeBench 2407-2501", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5", "SWE-bench-Verified", 64.2, "SWE-bench Verified, OpenHands", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5-air", "GPQA", 75.0, "GPQA Diamond, Avg@8", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5-air", "AIME-2024", 89.4, "AIME 2024, Avg@32", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5-air", "LiveCodeBench", 70.7, "LiveCodeBench 2407-2501", GLM_4_5, GLM_SETTING),
    ("zai", "glm-4.5-air", "SWE-bench-Verified", 57.6, "SWE-bench Verified, OpenHands", GLM_4_5, GLM_SETTING),
    ("ai21", "jamba-1.5-mini", "GPQA", 32.3, "GPQA", JAMBA_1_5, DEFAULT_SETTING),
    ("ai21", "jamba-1.5-large", "GPQA", 36.9, "GPQA", JAMBA_1_5, DEFAULT_SETTING),
    ("qwen", "Qwen2.5-14B-Instruct", "GPQA", 45.5, "GPQA", QWEN_2_5, DEFAULT_SETTING),
    ("qwen", "Qwen2.5-14B-Instruct", "MATH", 80.0, "MATH", QWEN_2_5, DEFAULT_SETTING),
    ("qwen", "Qwen2.5-14B-Instruct", "LiveCodeBench", 42.6, "LiveCodeBench", QWEN_2_5, DEFAULT_SETTING),
    ("zai", "GLM-4-32B-0414", "SWE-bench-Verified", 27.2,
     "SWE-bench Verified, OpenHands (Moatless 33.8, Agentless 30.7)", GLM_4_0414, DEFAULT_SETTING),
    ("mistral", "Ministral-3-14B-Instruct-2512", "MATH", 90.4, "MATH, Maj@1", MINISTRAL_3, DEFAULT_SETTING),
    ("mistral", "Ministral-3-8B-Instruct-2512", "MATH", 87.6, "MATH, Maj@1", MINISTRAL_3, DEFAULT_SETTING),
    ("mistral", "Ministral-3-3B-Instruct-2512", "MATH", 83.0, "MATH, Maj@1", MINISTRAL_3, DEFAULT_SETTING),
    *[("mistral", f"Ministral-3-{size}-Reasoning-2512", benchmark, score, protocol, MINISTRAL_3, DEFAULT_SETTING)
      for size, scores in (("14B", (85.0, 89.8, 71.2, 64.6)), ("8B", (78.7, 86.0, 66.8, 61.6)),
                           ("3B", (72.1, 77.5, 53.4, 54.8)))
      for (benchmark, protocol), score in zip((("AIME-2025", "AIME 2025"), ("AIME-2024", "AIME 2024"),
                                               ("GPQA", "GPQA Diamond"), ("LiveCodeBench", "LiveCodeBench")), scores)],
]


def rows() -> list[dict[str, str]]:
    out = []
    for provider, model, benchmark, score, protocol, source, setting in ENTRIES:
        assert not reaches_trained_model(model), model
        out.append(dict(provider=provider, model=model, benchmark=benchmark, score=f"{score:.1f}",
                        protocol=f"vendor's evaluation: {protocol}", source_url=source["url"],
                        source_note=source["note"], date=source["date"], setting=setting,
                        licence=source["licence"]))
    return out


def owns(row: dict[str, str]) -> bool:
    return row["licence"].startswith(LICENCE_PREFIX)


def main() -> None:
    removed, added, skipped = replace_source(rows(), owns)
    print(f"vendor cards: removed {removed} rows, added {added}, skipped {skipped} (another source)")


if __name__ == "__main__":
    main()
