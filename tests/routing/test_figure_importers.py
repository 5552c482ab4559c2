"""The importers that write public figures into datasets/model_benchmarks.csv (benchmarks/model_figures/): how a
source's setting becomes a row's name, that a rerun replaces only the importer's own rows, and that no row reaches a
model the shipped router trained on. They read local git snapshots; these tests use small files instead."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from benchmarks.model_figures import aider, epoch, transcribed, vendor_cards, vendor_quotes
from benchmarks.model_figures.common import COLUMNS, DEFAULT_SETTING, read_rows, reaches_trained_model, \
    replace_source, write_rows


def row(model: str, benchmark: str = "GPQA", score: str = "50.0", date: str = "2026-01-01",
        licence: str = "other") -> dict[str, str]:
    return dict(provider="openai", model=model, benchmark=benchmark, score=score, protocol="p",
                source_url="https://example.org", source_note="n", date=date, setting=DEFAULT_SETTING,
                licence=licence)


def test_epoch_settings_become_variants_except_the_api_default():
    assert epoch.split_setting("gpt-5-2025-08-07_medium") == (
        "gpt-5-2025-08-07", "API default (reasoning effort medium)", None)
    assert epoch.split_setting("gpt-5-2025-08-07_high")[2] == "reasoning-high"
    assert epoch.split_setting("gpt-5.1-2025-11-13_medium")[2] == "reasoning-medium"  # 5.1 defaults to none
    assert epoch.split_setting("gpt-5.1-2025-11-13_none")[2] is None
    assert epoch.split_setting("claude-opus-4-5-20251101_32K")[1:] == (
        "extended thinking, 32K token budget", "thinking-32k")
    assert epoch.split_setting("claude-opus-4-5-20251101") == ("claude-opus-4-5-20251101", DEFAULT_SETTING, None)
    assert epoch.split_setting("openai/gpt-oss-120b_high")[0] == "gpt-oss-120b"
    assert epoch.provider_of("gemini-3-pro-preview", "") == "google"
    assert epoch.provider_of("Hermes-2-Theta-Llama-3-70B", "Nous Research,Arcee AI") == "nous-research"


def test_a_rerun_replaces_its_own_rows_and_never_a_second_figure_of_another_source(tmp_path: Path):
    path = tmp_path / "figures.csv"
    write_rows([row("gpt-4o", licence="MIT"), row("o3", licence="mine")], path)
    mine = lambda r: r["licence"] == "mine"  # noqa: E731
    new = [row("o3", score="60.0", licence="mine"), row("gpt-4o", score="99.0", licence="mine"),
           row("o4-mini", date="2026-01-01", score="70.0", licence="mine"),
           row("o4-mini", date="2026-02-01", score="71.0", licence="mine")]
    assert replace_source(new, mine, path) == (1, 2, 2)
    rows = {(r["model"], r["licence"]): r["score"] for r in read_rows(path)}
    assert rows == {("gpt-4o", "MIT"): "50.0", ("o3", "mine"): "60.0", ("o4-mini", "mine"): "71.0"}  # latest run
    assert replace_source(new, mine, path) == (2, 2, 2)  # idempotent
    assert list(read_rows(path)[0]) == list(COLUMNS)


def test_no_importer_row_reaches_a_trained_model():
    assert reaches_trained_model("Mixtral-8x7B-Instruct-v0.1") and reaches_trained_model("Meta-Llama-3-8B-Instruct")
    assert reaches_trained_model("Mistral-7B-Instruct-v0.3")  # its base sibling is trained on
    assert not reaches_trained_model("Llama-3.1-8B-Instruct")
    assert not any(reaches_trained_model(r["model"].partition(":")[0]) for r in vendor_cards.rows())
    shipped = read_rows()
    ours = [r for r in shipped if any(m.owns(r) for m in (epoch, aider, vendor_cards, vendor_quotes, transcribed))]
    assert ours and not any(reaches_trained_model(r["model"].partition(":")[0]) for r in ours)


def test_the_epoch_importer_reads_a_snapshot(tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "benchmark_data").mkdir(parents=True)
    header = "Model version,mean_score,Best score (across scorers),Release date,Organization,Log viewer,Started at\n"
    for name in epoch.FILES:
        (repo / "benchmark_data" / name).write_text(
            header + "gpt-5-2025-08-07_high,0.86,0.86,2025-08-07,OpenAI,,2025-10-29T22:29:36Z\n"
                     "Mixtral-8x7B-Instruct-v0.1,0.3,0.3,2023-12-11,Mistral AI,,2025-01-01T00:00:00Z\n")
    (repo / "benchmark_data" / epoch.ECI_FILE).write_text(
        "Model version,ECI Score,Organization,Display name\n"
        "gpt-5-2025-08-07_high,150.0,OpenAI,GPT-5 (high)\ngpt-5-2025-08-07_medium,150.0,OpenAI,GPT-5 (medium)\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], check=True)
    rows = epoch.rows_from(repo / ".git", "HEAD", "owner/name", "2026-04-19")
    assert {r["model"] for r in rows} == {"gpt-5-2025-08-07:reasoning-high"}  # the trained model is left out
    assert {r["benchmark"] for r in rows} == {b for b, _ in epoch.FILES.values()}
    assert all(r["score"] == "86.0" and r["date"] == "2025-10-29" for r in rows)
    eci = epoch.eci_rows(repo / ".git", "HEAD", "owner/name", "2026-04-19")
    assert [(r["model"], r["score"]) for r in eci] == [("gpt-5-2025-08-07", "150.0")]  # one value for every setting
    assert eci[0]["setting"].startswith("model-level")


def test_quoted_figures_cite_two_pages_and_keep_a_stated_non_default_setting_apart():
    rows = vendor_quotes.rows()
    assert rows and all(r["source_url"].startswith("http") and r["source_url"] not in r["source_note"]
                        and "http" in r["source_note"] for r in rows)  # two different pages per figure
    by_name = {(r["model"], r["benchmark"]): r for r in rows}
    # xhigh, max, thinking-high and unstated settings are variants; a figure at the API default keeps the id
    assert by_name[("gpt-5.4-mini:reasoning-xhigh", "GPQA")]["setting"] == vendor_quotes.SETTINGS["reasoning-xhigh"]
    assert ("deepseek-v4-pro:reasoning-max", "SWE-bench-Verified") in by_name
    assert ("claude-opus-4-8:vendor-setting", "SWE-bench-Verified") in by_name
    assert by_name[("kimi-k2.6", "LiveCodeBench")]["setting"] == DEFAULT_SETTING
    assert all((":" in r["model"]) == (r["setting"] != DEFAULT_SETTING) for r in rows)
    shipped = {(r["model"], r["benchmark"]) for r in read_rows() if vendor_quotes.owns(r)}
    assert shipped == set(by_name)  # the shipped file holds exactly this importer's current rows


def test_transcribed_tables_take_only_the_vendors_own_column_at_its_stated_setting(tmp_path: Path):
    data = {"generatedAt": "2026-08-08T02:54:02+00:00",
            "sources": [{"id": "deepseek-v4-pro-card", "label": "DeepSeek-V4 release",
                         "url": "https://vendor.example/v4"},
                        {"id": "zai-glm-5-2-card", "label": "GLM-5.2 card", "url": "https://vendor.example/glm"}],
            "results": [
                {"model": "DeepSeek V4 Pro (High)", "benchmarkId": "gpqa-diamond", "value": 89.1,
                 "sourceId": "deepseek-v4-pro-card"},
                {"model": "DeepSeek V4 Pro (High)", "benchmarkId": "hle", "value": 34.5,  # not a CSV benchmark
                 "sourceId": "deepseek-v4-pro-card"},
                {"model": "DeepSeek V4 Pro (Max)", "benchmarkId": "gpqa-diamond", "value": 90.1,  # not picked
                 "sourceId": "deepseek-v4-pro-card"},
                {"model": "GLM-5.1", "benchmarkId": "gpqa-diamond", "value": 86.2,  # another vendor's table
                 "sourceId": "zai-glm-5-2-card"},
                {"model": "GLM-5.2 (max)", "benchmarkId": "gpqa-diamond", "value": 91.2,
                 "sourceId": "zai-glm-5-2-card"}]}
    repo = tmp_path / "repo"
    (repo / "data" / "benchmarks").mkdir(parents=True)
    (repo / transcribed.PATH).write_text(json.dumps(data))
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "snapshot"], check=True)
    rows = transcribed.rows_from(transcribed.read_snapshot(repo / ".git", "HEAD"), "abcdef1234")
    assert [(r["model"], r["benchmark"], r["score"]) for r in rows] == [
        ("deepseek-v4-pro", "GPQA", "89.1"), ("glm-5.2:reasoning-max", "GPQA", "91.2")]
    assert rows[0]["setting"].startswith(DEFAULT_SETTING) and rows[0]["source_url"] == "https://vendor.example/v4"
    assert rows[1]["setting"] == "reasoning effort max, as the vendor's table states"
    assert all(r["date"] == "2026-08-08" and "abcdef1" in r["source_note"] for r in rows)
