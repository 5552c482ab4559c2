"""The caller's prompt as a DSPy program, and back.

A caller's prompt is a system prompt plus a user-message template with {placeholders}. It becomes a one-predictor
program: the predictor's signature has one input field per placeholder, one output field `answer`, and the system
prompt as its instructions (the part optimizers rewrite). The template is kept in the program's state.

The program runs through `TemplateAdapter`, which sends exactly what the caller will send in production: the
instructions as the system message and the template filled in as the user message, and reads the whole reply as the
answer. So the scores measured during optimization are the scores of the prompt that is returned, not of DSPy's own
field-marker format. Back from the program: `system_prompt` = the optimized instructions, `user_message_template` =
the template, whose placeholders are therefore the caller's own (checked by `to_prompt`).
"""

from __future__ import annotations

from typing import Any

import dspy

from api.prompt_optimization.templates import fill, placeholders


class TemplateAdapter(dspy.Adapter):
    """System message = instructions, user message = the template filled in; the reply is the answer."""

    def __init__(self, template: str, fields: list[str]) -> None:
        super().__init__()
        self.template, self.fields = template, fields

    def format(self, signature: type[dspy.Signature], demos: list[dict[str, Any]],
               inputs: dict[str, Any]) -> list[dict[str, Any]]:
        values = {name: str(inputs.get(internal_name(i), "")) for i, name in enumerate(self.fields)}
        return [{"role": "system", "content": signature.instructions},
                {"role": "user", "content": fill(self.template, values)}]

    def parse(self, signature: type[dspy.Signature], completion: str) -> dict[str, Any]:
        return {"answer": (completion or "").strip()}


def internal_name(i: int) -> str:
    """Signature field names are fixed identifiers: callers' placeholders need not be (and may be `answer`)."""
    return f"field_{i}"


class PromptProgram(dspy.Module):
    def __init__(self, system_prompt: str, template: str, fields: list[str]) -> None:
        super().__init__()
        self.template, self.fields = template, list(fields)
        spec = {internal_name(i): dspy.InputField(desc=name) for i, name in enumerate(self.fields)}
        self.respond = dspy.Predict(dspy.Signature(spec | {"answer": dspy.OutputField()}, system_prompt))

    def forward(self, **inputs: Any) -> dspy.Prediction:
        return self.respond(**inputs)

    def inputs(self, values: dict[str, str]) -> dict[str, str]:
        """The caller's field values under the signature's names."""
        return {internal_name(i): values.get(name, "") for i, name in enumerate(self.fields)}

    @property
    def adapter(self) -> TemplateAdapter:
        return TemplateAdapter(self.template, self.fields)


def to_program(system_prompt: str, template: str, fields: list[str]) -> PromptProgram:
    return PromptProgram(system_prompt, template, fields)


def to_prompt(program: PromptProgram) -> tuple[str, str, list[str]]:
    """(system_prompt, user_message_template, user_message_template_fields) of a (possibly optimized) program."""
    instructions = program.respond.signature.instructions
    kept = placeholders(program.template)
    missing = [f for f in program.fields if f not in kept]
    if missing:  # the template is never rewritten, so this is a bug, not a user error
        raise AssertionError(f"placeholders lost: {missing}")
    return instructions, program.template, kept
