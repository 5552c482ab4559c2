"""The work of one model in a run, without Prefect: evaluate a prompt on goldens, optimize it with GEPA.

The flow (flows/optimize_prompt.py) only orchestrates these; tests call them directly too.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import dspy
from gepa.strategies.instruction_proposal import InstructionProposalSignature

from api.prompt_optimization import credentials
from api.prompt_optimization.templates import fill
from api.settings import OptimizeSettings
from flows.prompt_opt import metrics
from flows.prompt_opt.llm import BilledLM, ProviderNotConfigured
from flows.prompt_opt.never_worse import copied_examples
from flows.prompt_opt.program import PromptProgram, internal_name, to_program
from flows.prompt_opt.usage import CostCeilingExceeded, Ledger
from storage.optimization_records import ORIGIN


@dataclass(frozen=True)
class RunSpec:
    """The validated request a run was started with (stored as JSON in optimization_runs.request)."""

    system_prompt: str
    template: str
    fields: list[str]
    train: list[dict[str, Any]]
    test: list[dict[str, Any]]
    metric: str  # JSON_Match | LLMaaJ:Sem_Sim_1 | custom
    config: dict[str, Any] | None
    origin: list[str] | None
    targets: list[list[str]]
    origin_score: float | None = None
    # Models the caller described (is_custom): "provider/model" -> input_price, output_price, context_length.
    custom: dict[str, dict[str, Any]] | None = None
    judge: list[str] | None = None  # the request's judge_model, else SWITCHBOARD_OPTIMIZE_JUDGE_MODEL
    reflection: list[str] | None = None  # the request's reflection_model, else SWITCHBOARD_OPTIMIZE_REFLECTION_MODEL

    @classmethod
    def from_json(cls, raw: str) -> "RunSpec":
        return cls(**json.loads(raw))


@dataclass
class RunContext:
    spec: RunSpec
    settings: OptimizeSettings
    ledger: Ledger
    prices: dict[str, tuple[float, float]]  # "provider/model" -> USD per million (input, output)
    judge_lock: threading.Lock = field(default_factory=threading.Lock)

    def lm(self, provider: str, model: str, task_type: str, position: int, role: str, **kw: Any) -> BilledLM:
        custom = (self.spec.custom or {}).get(f"{provider}/{model}")
        if custom:  # a described model's replies must leave room for the prompt in its context
            kw.setdefault("max_tokens", max(16, min(self.settings.max_tokens(role), custom["context_length"] // 2)))
        return BilledLM(provider=provider, model=model, prices=self.prices[f"{provider}/{model}"], ledger=self.ledger,
                        task_type=task_type, position=position, role=role, settings=self.settings, **kw)

    def check_reachable(self, provider: str, model: str, role: str) -> None:
        """Before a model's first call: the service can call every model its work needs (the model, the judge, and
        for a target the reflection model), else ProviderNotConfigured at once, before anything is spent."""
        spec = dataclasses.asdict(self.spec)
        models = [(provider, model, role), *credentials.judge(spec, self.settings)]
        if role == credentials.TARGET:
            models += credentials.reflection(spec, self.settings)
        missing = credentials.unreachable(models, self.settings)
        if missing:
            raise ProviderNotConfigured(missing)

    def judge_model(self) -> tuple[str, str]:
        name = credentials.judge_name(dataclasses.asdict(self.spec), self.settings) or ""
        provider, _, model = name.partition("/")
        return provider, model

    def reflection_model(self) -> tuple[str, str]:
        provider, _, model = credentials.reflection_name(dataclasses.asdict(self.spec), self.settings).partition("/")
        return provider, model

    def scorer(self, task_type: str, position: int):
        """(golden, response) -> Verdict, with the judge (if any) billed to this model's task."""
        judge_lm = None
        if self.spec.metric not in credentials.NO_JUDGE_METRICS:
            provider, model = self.judge_model()
            judge_lm = self.lm(provider, model, task_type, position, "judge")

        def judge(messages: list[dict[str, str]]) -> str:
            assert judge_lm is not None
            return judge_lm.reply(messages)

        def score(golden: dict[str, Any], response: str) -> metrics.Verdict:
            if self.spec.metric == "JSON_Match":
                return metrics.json_match(golden.get("answer") or "", response)
            if self.spec.metric == "Exact_Match":
                return metrics.exact_match(golden.get("answer") or "", response)
            if self.spec.metric == "LLMaaJ:Sem_Sim_1":
                return metrics.sem_sim(golden.get("answer") or "", response, judge)
            question = fill(self.spec.template, golden["fields"])
            return metrics.custom_judge(self.spec.config or {}, question, golden.get("answer"), response, judge)

        return score


def evaluate(ctx: RunContext, program: PromptProgram, provider: str, model: str, goldens: list[dict[str, Any]],
             task_type: str, position: int) -> tuple[float, dict[str, Any], list[float]]:
    """Mean score of the program on the goldens with this model, the evals summary, and each golden's score (in
    order: the never-worse rule pairs them). Provider errors that survive LiteLLM's retries propagate: the model's
    result fails rather than scoring a broken run."""
    target_lm = ctx.lm(provider, model, task_type, position, "origin" if position == ORIGIN else "target")
    score = ctx.scorer(task_type, position)

    def one(golden: dict[str, Any]) -> metrics.Verdict:
        with dspy.context(lm=target_lm, adapter=program.adapter):
            response = program(**program.inputs(golden["fields"])).answer
        return score(golden, response)

    with ThreadPoolExecutor(max_workers=ctx.settings.threads, thread_name_prefix="evaluate") as pool:
        verdicts = list(pool.map(one, goldens))
    if ctx.ledger.exceeded:
        raise CostCeilingExceeded(ctx.ledger.reason())
    summary = metrics.summarise(ctx.spec.metric, verdicts, ctx.spec.config)
    return summary["score"], summary, [v.score for v in verdicts]


def metric_budget(ctx: RunContext, n_val: int) -> int:
    """GEPA's metric-call budget: one seed evaluation, then room for a few reflective steps and one more full pass."""
    if ctx.settings.max_metric_calls:
        return ctx.settings.max_metric_calls
    return 2 * n_val + 12


def optimize(ctx: RunContext, provider: str, model: str, position: int) -> tuple[PromptProgram, int]:
    """GEPA over the caller's program on the train goldens; returns the best program found and how many proposals
    were refused for copying training examples (flows/prompt_opt/never_worse.py)."""

    spec = ctx.spec
    student = to_program(spec.system_prompt, spec.template, spec.fields)
    target_lm = ctx.lm(provider, model, "optimization", position, "target")
    reflection_lm = ctx.lm(*ctx.reflection_model(), "optimization", position, "reflection", temperature=0.7)
    score = ctx.scorer("optimization", position)
    by_inputs = {json.dumps(student.inputs(g["fields"]), sort_keys=True): g for g in spec.train}
    refused: list[str] = []

    def gepa_metric(gold: dspy.Example, pred: dspy.Prediction, trace=None, pred_name=None, pred_trace=None):
        golden = by_inputs[json.dumps({k: gold[k] for k in gold.inputs().keys()}, sort_keys=True)]
        verdict = score(golden, getattr(pred, "answer", "") or "")
        return dspy.Prediction(score=verdict.score, feedback=verdict.feedback)

    def propose(candidate: dict[str, str], reflective_dataset: dict[str, list[dict[str, Any]]],
                components_to_update: list[str]) -> dict[str, str]:
        # A direct LM call (not through a DSPy adapter) with GEPA's own reflection prompt; the reply's ``` block
        # is the new instruction.
        out = {}
        for name in components_to_update:
            prompt = InstructionProposalSignature.prompt_renderer(
                {"current_instruction_doc": candidate[name], "dataset_with_feedback": reflective_dataset[name]})
            messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
            reply = reflection_lm.reply(messages)
            proposal = InstructionProposalSignature.output_extractor(reply)["new_instruction"].strip()
            if proposal and copied_examples(proposal, spec.system_prompt, spec.train):
                refused.append(proposal)  # it would learn the train set, not the task: keep the current one
                proposal = ""
            out[name] = proposal or candidate[name]
        return out

    names = [internal_name(i) for i in range(len(spec.fields))]
    trainset = [dspy.Example(**student.inputs(g["fields"]), answer=g.get("answer") or "").with_inputs(*names)
                for g in spec.train]
    optimizer = dspy.GEPA(metric=gepa_metric, max_metric_calls=metric_budget(ctx, len(trainset)),
                          reflection_lm=reflection_lm, instruction_proposer=propose, use_merge=False,
                          num_threads=ctx.settings.threads, reflection_minibatch_size=min(3, len(trainset)),
                          track_stats=False, seed=0, warn_on_score_mismatch=False)
    with dspy.context(lm=target_lm, adapter=student.adapter):
        compiled = optimizer.compile(student, trainset=trainset, valset=trainset)
    if ctx.ledger.exceeded:
        raise CostCeilingExceeded(ctx.ledger.reason())
    return to_program(compiled.respond.signature.instructions, spec.template, spec.fields), len(refused)

