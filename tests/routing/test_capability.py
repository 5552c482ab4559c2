"""What the default router believes about a model: figures found by each spelling rule, proxy benchmarks mapped by
fitted lines and averaged with the axis' own figure, and an uncertain prior that rewards neither price nor size."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from api.routing import model_names, policy
from api.routing.capability import (
    AXES,
    AXIS_BENCHMARKS,
    PROXY_BENCHMARKS,
    CapabilityPrior,
    FigureRow,
    UNCERTAINTY_Z,
    fit_proxy_lines,
    prior_with,
    to_capability,
)
from api.routing.default_router import DEFAULT_PRIOR_PATH, load_default_router
from api.routing.router import Candidate

URL = "https://example.org/figures"


def rows(*figures: tuple[str, str, str, float]) -> list[FigureRow]:
    return [FigureRow(p, m.lower(), b, s, URL) for p, m, b, s in figures]


@pytest.mark.parametrize(("spelt", "stored", "level"), [
    ("Llama-3.1-70B-Instruct", "llama3.1-70b-instruct", model_names.SPELLING),  # case, dots vs none
    ("Meta-Llama-3_1-70B-Instruct", "meta-llama/Llama-3.1-70B-Instruct", model_names.SPELLING),  # vendor, _ vs .
    ("Llama-3.1-405B-Inst@sambanova", "llama-3.1-405b-instruct", model_names.SPELLING),  # host, 'inst'
    ("Llama-2-7b-hf", "llama-2-7b", model_names.SPELLING),  # the same weights in HF format
    ("c4ai-command-r-v01", "command-r", model_names.SNAPSHOT),  # vendor word, release tag
    ("gpt-4o-2024-08-06", "gpt-4o", model_names.SNAPSHOT),  # date
    ("gemini-1.5-pro-002", "gemini-1.5-pro-exp-0827", model_names.SNAPSHOT),  # version, experimental build
    ("meta-llama/Meta-Llama-3.1-8B-Instruct-Turbo", "Meta-Llama-3.1-8B-Instruct", model_names.SNAPSHOT),  # serving
    ("Llama-3.1-405B-Inst-fp8", "Meta-Llama-3.1-405B-Instruct", model_names.SNAPSHOT),  # quantised
    ("Mistral-7B-Instruct-v0.3", "mistralai/Mistral-7B-Instruct-v0.1", model_names.SNAPSHOT),
    ("DeepSeek-Coder-V2", "deepseek-v2-coder-0724", model_names.SNAPSHOT),  # word order
    ("claude-sonnet-3-5", "claude-3-5-sonnet-20240620", model_names.SNAPSHOT),
    ("Yi-6B", "Yi-6b-Chat", model_names.VARIANT),  # a base model and its chat sibling
    ("Meta-Llama-3_1-70B", "Meta-Llama-3.1-70B-Instruct", model_names.VARIANT),
    ("gemma-2-9b", "gemma-2-9b-it", model_names.VARIANT),
])
def test_each_rule_matches_at_its_level_and_not_before(spelt, stored, level):
    assert model_names.key(spelt, level) == model_names.key(stored, level)
    if level > model_names.SPELLING:
        assert model_names.key(spelt, level - 1) != model_names.key(stored, level - 1)


@pytest.mark.parametrize(("a", "b"), [
    ("gpt-4", "gpt-4o"), ("gpt-4o", "gpt-4o-mini"), ("llama-3.1-8b", "llama-3.1-70b"), ("qwen2-7b", "qwen2.5-7b"),
    ("deepseek-v2", "deepseek-v3"), ("o1", "o3"), ("Mistral-Large-2", "Mistral-Large-3"),
    ("claude-3-opus", "claude-3-haiku"),
])
def test_different_models_never_match(a, b):
    assert all(model_names.key(a, level) != model_names.key(b, level) for level in model_names.LEVELS)


def test_exact_then_spelling_then_snapshot_then_variant():
    prior = CapabilityPrior(rows(
        ("meta", "Meta-Llama-3.1-70B-Instruct", "MMLU", 83.0),
        ("together", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "MMLU", 82.0),
        ("meta", "Llama-3.1-70B", "MMLU", 79.0),
        ("acme", "widget-2024-01-01", "MMLU", 70.0),
        ("acme", "widget-2024-06-01", "MMLU", 72.0),
    ))
    assert prior.lookup("together", "meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo") == (pytest.approx(0.2), "prior")
    assert prior.lookup("custom", "llama3_1-70b-instruct") == (pytest.approx(0.3), "prior")  # respelt
    # another snapshot: the mean of the rows found, less UNCERTAINTY_Z of that level's measured spread
    borrowed = UNCERTAINTY_Z * prior.level_sd[model_names.SNAPSHOT]
    assert prior.lookup("custom", "Llama-3.1-70B-Instruct-fp8") == (pytest.approx(0.25 - borrowed), "family")
    assert prior.lookup("custom", "widget-latest") == (pytest.approx(-0.9 - borrowed), "family")
    assert prior.lookup("custom", "Llama-3.1-70B") == (pytest.approx(-0.1), "prior")  # the base has its own figure
    assert prior.lookup("custom", "Llama-3.1-70B-chat")[1] == "family"  # a sibling's figure


def test_the_providers_own_row_wins_over_the_same_name_elsewhere_whatever_the_price():
    prior = CapabilityPrior(rows(("host", "acme/widget-7b", "MMLU", 70.0), ("acme", "widget-7b", "MMLU", 60.0),
                                 ("acme", "widget-7b", "MMLU-Pro", 30.0)))
    for price in (None, 1.0):
        assert prior.profile("host", "acme/widget-7b", price)[0][0] == pytest.approx(to_capability(70.0))


def test_a_borrowed_figure_carries_its_uncertainty_so_a_model_measured_under_its_own_name_wins_a_tie():
    prior = CapabilityPrior(rows(
        ("acme", "widget-2024-01-01", "MMLU", 70.0), ("acme", "widget-2024-06-01", "MMLU", 72.0),
        ("acme", "gizmo", "MMLU", 71.0), ("acme", "gizmo-base", "MMLU", 61.0),
        ("acme", "gizmo-base-chat", "MMLU", 65.0),
    ))
    # two snapshots 2 points apart: a borrowed snapshot figure is off by 2 / sqrt(2) points, 0.141 on the scale, as
    # a robust spread (1.4826 x the median absolute difference: one pair of rival protocols sets no spread alone)
    assert prior.level_sd[model_names.SNAPSHOT] == pytest.approx(1.4826 * 0.2 / np.sqrt(2))
    assert prior.level_sd[model_names.VARIANT] == pytest.approx(1.4826 * 0.4 / np.sqrt(2))  # base and chat sibling
    own = prior.lookup("acme", "gizmo")[0]
    snapshot = prior.lookup("acme", "widget-latest")[0]  # mean 71, the same as gizmo's own figure
    assert snapshot == pytest.approx(own - UNCERTAINTY_Z * prior.level_sd[model_names.SNAPSHOT]) and snapshot < own


def test_proxy_benchmarks_map_by_a_line_and_join_the_axis_own_figure():
    models = [("m%d" % i, mmlu, pro) for i, (mmlu, pro) in enumerate([(60, 30), (70, 40), (80, 50), (87, 57)])]
    figures = [("acme", m, "MMLU", mmlu) for m, mmlu, _ in models]
    figures += [("acme", m, "MMLU-Pro", pro) for m, _, pro in models]
    figures += [("acme", "pro-only", "MMLU-Pro", 45.0), ("acme", "both", "MMLU", 62.0),
                ("acme", "both", "MMLU-Pro", 58.0), ("acme", "far-down", "MMLU-Pro", 1.0),
                ("acme", "far-up", "MMLU-Pro", 99.0)]
    prior = CapabilityPrior(rows(*figures))
    intercept, slope, lower, upper = prior.lines["MMLU-Pro"]
    pairs = [(p, to_capability(m)) for _, m, p in models] + [(58.0, to_capability(62))]  # every model with both
    expected_slope, expected_intercept = np.polyfit(*zip(*pairs), 1)
    assert (slope, intercept) == (pytest.approx(expected_slope), pytest.approx(expected_intercept))
    # clamped below to the fitted range, above only at the proxy's own ceiling (a harder benchmark may separate
    # models above the anchor's range: api/routing/axes.py)
    assert (lower, upper) == (pytest.approx(to_capability(60)), pytest.approx(intercept + slope * 100))
    assert prior.lookup("acme", "pro-only")[0] == pytest.approx(intercept + slope * 45)
    # own figure and proxy both count: their mean (a saturated benchmark no longer hides what another separates)
    assert prior.lookup("acme", "both")[0] == pytest.approx((to_capability(62) + intercept + slope * 58) / 2)
    assert prior.lookup("acme", "far-down")[0] == pytest.approx(lower)
    assert prior.lookup("acme", "far-up")[0] == pytest.approx(intercept + slope * 99)
    assert prior.lookup("acme", "far-up")[0] > to_capability(87)
    # too few models with both: no line, so the proxy is not used
    assert "MMLU-Pro" not in fit_proxy_lines({("x",): {"MMLU": 70.0, "MMLU-Pro": 40.0}})


def test_measured_figures_and_a_narrower_file_keep_the_lines_anchors(tmp_path):
    """Onboarding's measured MMLU-Pro reaches knowledge through a line; neither a figures file that leaves the
    anchoring models out nor the measured rows themselves may move or remove that line (issue 32). A file that
    leaves the benchmark itself out leaves its line out too (a benchmark held out stays held out)."""
    anchors = [("acme", f"m{i}", b, s) for i, pair in enumerate([(60, 30), (70, 40), (80, 50), (87, 57)])
               for b, s in zip(("MMLU", "MMLU-Pro"), pair)]
    full = CapabilityPrior(rows(*anchors))
    narrow = rows(("acme", "other", "MMLU", 75.0), ("acme", "pro-only", "MMLU-Pro", 40.0))  # the anchors left out
    measured = rows(("huggingface", "new-model", "MMLU-Pro", 45.0))
    onboarded = prior_with(narrow, measured, full)
    line = full.lines["MMLU-Pro"]
    assert onboarded.lines["MMLU-Pro"] == line
    assert onboarded.lookup("huggingface", "new-model") == (pytest.approx(line[0] + line[1] * 45), "prior")
    assert "MMLU-Pro" not in CapabilityPrior(narrow + measured).lines  # what it was before: no anchors, no line
    assert onboarded.with_rows(measured).lines["MMLU-Pro"] == line
    assert "MMLU-Pro" not in prior_with(rows(("acme", "other", "MMLU", 75.0)), [], full).lines

    def written(keep) -> Path:  # the shipped file, only the rows `keep` accepts
        path = tmp_path / f"figures-{len(list(tmp_path.iterdir()))}.csv"
        with DEFAULT_PRIOR_PATH.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            kept = [r for r in reader if keep(r)]
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=reader.fieldnames, lineterminator="\n")
            writer.writeheader()
            writer.writerows(kept)
        return path

    # SWITCHBOARD_MODEL_FIGURES naming a file without the models that anchor MMLU-Pro: the shipped anchors stay
    shipped = load_default_router().prior
    anchoring = {r.model for r in shipped.rows if r.benchmark == "MMLU-Pro"} & \
        {r.model for r in shipped.rows if r.benchmark == "MMLU"}
    loaded = load_default_router(prior_path=written(lambda r: r["model"].strip().lower() not in anchoring)).prior
    assert loaded.lines["MMLU-Pro"] == pytest.approx(shipped.lines["MMLU-Pro"])
    assert not anchoring & {r.model for r in loaded.rows}  # the evidence is the named file's alone
    assert "MMLU-Pro" not in load_default_router(prior_path=written(lambda r: r["benchmark"] != "MMLU-Pro")).prior.lines


def test_a_saturated_figure_neither_fits_a_line_nor_squashes_a_harder_benchmark():
    """Every frontier model scores about 90 on MMLU: the GPQA line is fitted where MMLU still separates, and a
    model at 91 on MMLU reads knowledge from GPQA (never below its MMLU)."""
    fitted = [(60, 30), (70, 35), (80, 45), (86, 52)]
    figures = [("acme", f"m{i}", b, s) for i, pair in enumerate(fitted) for b, s in zip(("MMLU", "GPQA"), pair)]
    figures += [("acme", "frontier", "MMLU", 91.0), ("acme", "frontier", "GPQA", 85.0),
                ("acme", "older", "MMLU", 90.0), ("acme", "older", "GPQA", 50.0),
                ("acme", "saturated-only", "MMLU", 92.0)]
    prior = CapabilityPrior(rows(*figures))
    intercept, slope, *_ = prior.lines["GPQA"]
    expected_slope, expected_intercept = np.polyfit([g for _, g in fitted], [to_capability(m) for m, _ in fitted], 1)
    assert (slope, intercept) == (pytest.approx(expected_slope), pytest.approx(expected_intercept))
    assert prior.lookup("acme", "frontier")[0] == pytest.approx(intercept + slope * 85)
    assert prior.lookup("acme", "frontier")[0] > to_capability(91) + 1
    assert prior.lookup("acme", "older")[0] == pytest.approx(to_capability(90))  # the floor
    assert prior.lookup("acme", "saturated-only")[0] == pytest.approx(to_capability(92))


def test_the_uncertain_prior_is_a_low_quantile_of_known_models_and_ignores_price():
    known = [("acme", f"m{i}", axis_benchmark, score) for i, score in enumerate([50, 60, 70, 80, 90])
             for axis_benchmark in ("MMLU", "GSM8K", "HumanEval")]
    prior = CapabilityPrior(rows(*known))
    caps = [to_capability(s) for s in (50, 60, 70, 80, 90)]
    assert prior.uncertain == pytest.approx([np.quantile(caps, 0.25)] * len(AXES))
    cheap, how, per_axis, _ = prior.profile("custom", "never-heard-of-it")
    assert how == "uncertain" and per_axis == ("uncertain",) * len(AXES)
    assert prior.skills("custom", "never-heard-of-it", 0.01, 4096)[0] == pytest.approx(cheap)
    assert prior.skills("custom", "never-heard-of-it-pro", 500.0, 2_000_000)[0] == pytest.approx(cheap)


@pytest.fixture(scope="module")
def router():
    return load_default_router()


def test_an_unknown_expensive_model_does_not_outrank_a_known_strong_one_at_t0(router):
    known = Candidate("openai", "gpt-4o-2024-08-06", 2.5, 10.0, 128000)
    unknown = [Candidate("custom", "mega-model-2000b", 60.0, 240.0, 2_000_000),  # dearest, largest context
               Candidate("custom", "tiny-model", 0.01, 0.01, 4096)]
    sources = [e["source"] for e in router.explain([known, *unknown])]
    assert sources == ["prior", "uncertain", "uncertain"]
    for prompt in ("What is the capital of Australia?", "Solve for x: 3x + 7 = 22. Show each step.",
                   "Write a Python function that merges two sorted linked lists."):
        f = router.featurizer.featurize(prompt)
        q = router.predict_quality(f, [known, *unknown])
        assert q[0] > q[1] and q[1] == pytest.approx(q[2])  # price and context say nothing about skill
        cost = policy.request_cost_usd(np.array([2.5, 60.0, 0.01]), np.array([10.0, 240.0, 0.01]), 50)
        assert policy.choose(q, cost, cost_quality_tradeoff=0, schedule=router.schedule).index == 0


def test_explain_says_where_each_axis_came_from(router):
    out = router.explain([Candidate("huggingface", "Meta-Llama-3_1-70B", 0.9, 0.9, 32768),
                          Candidate("huggingface", "Qwen1.5-110B", 1.2, 1.2, 32768)])
    assert out[0]["source"] == "prior"  # its own MMLU-Pro figure, mapped onto knowledge
    assert out[0]["skills"]["maths"]["source"] == "family"  # its Instruct sibling's ZeroEval figures
    assert out[1]["skills"]["code"]["source"] == "imputed"  # only MMLU-Pro: code from knowledge
    # each estimate says how uncertain it is: none for its own figure, the line's residual for an imputed one
    assert out[0]["skills"]["knowledge"]["uncertainty"] == 0.0
    assert out[1]["skills"]["code"]["uncertainty"] == pytest.approx(router.prior.imputation_sd["code"])
    assert router.prior.imputation_sd["code"] > 0
    assert set(out[0]["skills"]) == set(AXES)


INDEX_BENCHMARKS = {"ECI"}


def test_every_shipped_figure_has_a_cited_source_and_a_known_benchmark():
    known = {b for group in (AXIS_BENCHMARKS, PROXY_BENCHMARKS) for bs in group.values() for b in bs}
    with DEFAULT_PRIOR_PATH.open(newline="", encoding="utf-8") as f:
        shipped = list(csv.DictReader(f))
    assert shipped and all(r["benchmark"] in known for r in shipped)
    assert all(r["source_url"].startswith("https://") and r["model"] for r in shipped)
    # percentages, except the indexes (Epoch's ECI), whose scale is their own
    assert all(0 <= float(r["score"]) <= 100 for r in shipped if r["benchmark"] not in INDEX_BENCHMARKS)
    assert all(r["date"] and r["setting"] and r["licence"] for r in shipped if r["benchmark"] in INDEX_BENCHMARKS)
    # one figure per (provider, model, benchmark): a second would silently average
    assert len({(r["provider"], r["model"].lower(), r["benchmark"]) for r in shipped}) == len(shipped)
