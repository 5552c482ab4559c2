"""The caller's prompt <-> DSPy program conversion, the metrics, and usage accounting, against the fake server."""

from __future__ import annotations

import json

import pytest

from api.prompt_optimization.templates import placeholders
from api.settings import get_settings
from flows.prompt_opt import metrics
from flows.prompt_opt.program import to_program, to_prompt
from flows.prompt_opt.usage import CostCeilingExceeded, Ledger
from tests.support.fakes.openai_server import OBEY_PHRASE, capital_goldens, teach_goldens


def test_program_round_trip_keeps_the_callers_placeholders():
    template = "Context: {context}\nQ: {question}\nLiteral {{braces}} and {question} again; {answer} too"
    program = to_program("Be precise.", template, ["question", "context", "answer"])
    messages = program.adapter.format(program.respond.signature, [],
                                      program.inputs({"question": "Why?", "context": "None", "answer": "A"}))
    assert messages == [{"role": "system", "content": "Be precise."},
                        {"role": "user", "content": "Context: None\nQ: Why?\nLiteral {braces} and Why? again; A too"}]
    program.respond.signature = program.respond.signature.with_instructions("Be precise. " + OBEY_PHRASE)
    system_prompt, user_template, fields = to_prompt(program)
    assert system_prompt == "Be precise. " + OBEY_PHRASE and user_template == template
    assert fields == placeholders(template) == ["context", "question", "answer"]
    assert program.adapter.parse(program.respond.signature, "  Paris \n") == {"answer": "Paris"}


def test_program_state_saves_as_json(tmp_path):
    program = to_program("Be precise.", "Q: {question}", ["question"])
    path = tmp_path / "program.json"
    program.save(str(path))  # DSPy JSON state, never a pickle (docs/architecture.md, rule 5)
    assert json.loads(path.read_text())["respond"]["signature"]["instructions"] == "Be precise."


def test_exact_match_normalises_case_whitespace_and_final_punctuation():
    assert metrics.exact_match("positive", "Positive.").score == 1
    assert metrics.exact_match("New  York", "  new york!\n").score == 1
    assert metrics.exact_match("positive", "The sentiment is positive.").score == 0  # not a containment test
    assert metrics.exact_match("3.5", "3.5").score == 1 and metrics.exact_match("3.5", "35").score == 0
    evals = metrics.summarise("Exact_Match", [metrics.exact_match("positive", "positive"),
                                              metrics.exact_match("positive", "Positive."),
                                              metrics.exact_match("positive", "negative")], None)
    assert evals["score"] == pytest.approx(2 / 3) and evals["strict_match_rate"] == pytest.approx(1 / 3)


def test_json_match_gives_partial_credit_per_field():
    expected = '{"capital": "City001", "country": "Country001"}'
    assert metrics.json_match(expected, '```json\n{"capital": "city001", "country": "Country001"}\n```').score == 1
    half = metrics.json_match(expected, '{"capital": "City001", "country": "Elsewhere"}')
    assert half.score == 0.5 and "country" in half.feedback
    assert metrics.json_match(expected, "Sure! City001").score == 0
    assert metrics.json_match("City001", "city001").score == 1  # plain-text answers compare as text
    evals = metrics.summarise("JSON_Match", [metrics.json_match(expected, '{"capital": "City001"}'),
                                             metrics.json_match(expected, "nope")], None)
    assert evals["field_accuracy"] == {"capital": 0.5, "country": 0.0} and evals["parse_rate"] == 0.5
    assert evals["score"] == 0.25


def test_judged_metrics_and_usage_records(fake_llm, data_dir):
    from flows.prompt_opt.work import RunContext, RunSpec, evaluate

    goldens = capital_goldens(6)
    teach_goldens(fake_llm, goldens)
    config = {"llm_judge": "openai/gpt-4o-mini", "llm_judging_prompt": "Question: {question}\nAnswer: {answer}",
              "correctness_cutoff": 0.7}
    prices = {"openai/gpt-4o-mini": (0.15, 0.6), "anthropic/claude-haiku-4-5": (1.0, 5.0)}
    for metric, cfg in (("custom", config), ("LLMaaJ:Sem_Sim_1", None)):
        spec = RunSpec("Be a geographer.", "Q: {question}", ["question"], goldens, goldens, metric, cfg, None,
                       [["anthropic", "claude-haiku-4-5"]])
        ctx = RunContext(spec, get_settings().optimize, Ledger("run", "u", "o", 1.0), prices)
        program = to_program(spec.system_prompt, spec.template, spec.fields)
        before, evals, _ = evaluate(ctx, program, "anthropic", "claude-haiku-4-5", goldens, "pre-optimization evaluation", 0)
        better = to_program("Be a geographer. Always " + OBEY_PHRASE + ".", spec.template, spec.fields)
        after, _, _ = evaluate(ctx, better, "anthropic", "claude-haiku-4-5", goldens, "post-optimization evaluation", 0)
        assert before < after == 1.0, metric
        assert evals["metric"] == metric and evals["num_examples"] == 6
        # One record per call: a target answer and a judge verdict per golden, per evaluation.
        roles = [r["role"] for r in ctx.ledger.records]
        assert roles.count("target") == roles.count("judge") == 12
        judge = next(r for r in ctx.ledger.records if r["role"] == "judge")
        assert judge["model"] == "gpt-4o-mini" and judge["total_cost"] == pytest.approx(
            judge["input_tokens"] * 0.15e-6 + judge["output_tokens"] * 0.6e-6)
        assert ctx.ledger.total == pytest.approx(sum(r["total_cost"] for r in ctx.ledger.records))
    assert evals["score"] == before


def test_the_ledger_refuses_calls_past_the_ceiling():
    ledger = Ledger("run", "u", "o", ceiling_usd=0.001)
    ledger.check()  # nothing spent yet
    ledger.add(provider="openai", model="gpt-4o", prices=(2.5, 10.0), usage={"prompt_tokens": 400, "completion_tokens": 10},
               task_type="optimization", position=0, role="target", latency_s=0.0)
    assert ledger.exceeded  # $0.0011 spent: the next call is refused before it is sent
    with pytest.raises(CostCeilingExceeded, match="ceiling of \\$0.0010"):
        ledger.check()


def test_the_network_guard_refuses_the_internet(monkeypatch):
    import httpx

    from tests.support.fakes.network import forbid_network

    refused = forbid_network(monkeypatch)
    with pytest.raises(httpx.ConnectError):
        httpx.get("https://raw.githubusercontent.com/", timeout=2)
    assert refused == ["raw.githubusercontent.com"]
