"""Never a worse prompt: a target's result is the better of the optimized and the caller's prompt on the test goldens,
with the difference and its bootstrap interval in its evals; candidates copying training examples are refused. The
flow runs in-process against the fake model, started and read back through the real app over HTTP."""

from __future__ import annotations

import pytest

from flows.prompt_opt.never_worse import choose, copied_examples, paired_bootstrap
from tests.support.fakes.openai_server import OVERFIT_PHRASE, capital_goldens, teach_goldens
from tests.support.optimization import OPTIMIZE, body, run_flow


def test_copied_examples_finds_long_training_texts_only():
    goldens = [{"fields": {"question": "What is the capital of Country001?"}, "answer": "City001"},
               {"fields": {"question": "Short?"}, "answer": "A long answer that was pasted in verbatim."}]
    original = "You are a geography assistant."
    pasted = (original + "\nKnown: what is the capital of   country001? -> City001\n"
              "A LONG answer that was pasted in verbatim.")
    assert copied_examples(pasted, original, goldens) == ["what is the capital of country001?",
                                                          "a long answer that was pasted in verbatim."]
    # Labels and short texts may rightly appear in instructions; so may what the caller's own prompt already held.
    assert copied_examples(original + " Answer with the city, e.g. City001. Short?", original, goldens) == []
    assert copied_examples(pasted, pasted, goldens) == []


def test_paired_bootstrap_brackets_the_mean_difference():
    before, after = [0.0, 1.0, 0.0, 1.0, 0.5, 0.0], [1.0, 1.0, 0.0, 1.0, 1.0, 1.0]
    mean, low, high = paired_bootstrap(before, after)
    assert mean == pytest.approx(2.5 / 6)
    assert 0.0 <= low <= mean <= high <= 1.0 and low < high
    assert paired_bootstrap([0.5, 0.5], [0.5, 0.5]) == (0.0, 0.0, 0.0)  # no difference, no spread


def test_choose_keeps_the_original_unless_the_candidate_beats_it_without_copying():
    assert choose([0.0, 1.0], [1.0, 1.0], []).keep_optimized
    tie = choose([0.5, 1.0], [1.0, 0.5], [])
    assert not tie.keep_optimized and "did not beat" in tie.reason and tie.report["returned"] == "original"
    copying = choose([0.0, 0.0], [1.0, 1.0], ["what is the capital of country001?"], rejected_proposals=2)
    assert not copying.keep_optimized and "verbatim" in copying.reason
    assert copying.report["copied_training_texts"] == 1 and copying.report["rejected_copying_proposals"] == 2


def _run(client, launcher, headers, **change) -> dict:
    r = client.post(OPTIMIZE, headers=headers, json=body(**change))
    assert r.status_code == 200, r.text
    run_id = r.json()["optimization_run_id"]
    assert launcher.triggered[-1][1] == {"run_id": run_id}
    state, _ = run_flow(run_id)  # what the queued flow run does, in-process
    assert state.is_completed(), state.message
    return client.get(f"/v2/prompt/optimizeResults/{run_id}", headers=headers).json()


@pytest.mark.usefixtures("prefect_harness")
def test_a_rewrite_worse_on_the_test_goldens_is_never_returned(fake_llm, client, launcher, optimizer_headers):
    """The reflection model's rewrite makes the target answer only the questions it has seen: better on the train
    goldens (so GEPA picks it), worse on the test goldens. The caller's prompt comes back, the run is completed."""
    train, test = capital_goldens(6), capital_goldens(8, start=6)
    teach_goldens(fake_llm, train + test)
    fake_llm.rewrites = "overfit"
    fake_llm.memorised = {g["fields"]["question"] for g in train}
    results = _run(client, launcher, optimizer_headers(), train_goldens=train, test_goldens=test,
                   prototype_mode=True, evaluation_metric="JSON_Match")
    assert results["job_status"] == "completed"
    [target] = results["target_models"]
    assert target["result_status"] == "completed" and target["pre_optimization_score"] > 0
    assert target["system_prompt"] == "You are a geography assistant."  # the caller's own prompt
    assert target["score_improvement"] == 0
    assert target["post_optimization_score"] == target["pre_optimization_score"]
    evals = target["post_optimization_evals"]
    verdict, candidate = evals["never_worse"], evals["optimized_candidate"]
    assert verdict["returned"] == "original" and "did not beat" in verdict["reason"]
    assert verdict["optimized_score"] == candidate["score"] < verdict["original_score"]
    low, high = verdict["difference_ci95"]
    assert low <= verdict["difference"] <= high and verdict["difference"] < 0 and verdict["num_examples"] == 8
    assert OVERFIT_PHRASE in str(fake_llm.bodies)  # GEPA did pick and evaluate the worse rewrite


@pytest.mark.usefixtures("prefect_harness")
def test_candidates_copying_training_examples_are_refused(fake_llm, client, launcher, optimizer_headers):
    train, test = capital_goldens(6), capital_goldens(6, start=6)
    teach_goldens(fake_llm, train + test)
    fake_llm.rewrites = "copy"
    results = _run(client, launcher, optimizer_headers(), train_goldens=train, test_goldens=test,
                   prototype_mode=True, evaluation_metric="JSON_Match")
    [target] = results["target_models"]
    assert target["result_status"] == "completed" and target["score_improvement"] == 0
    assert not any(g["fields"]["question"] in target["system_prompt"] for g in train)
    verdict = target["post_optimization_evals"]["never_worse"]
    assert verdict["returned"] == "original" and verdict["rejected_copying_proposals"] >= 1
