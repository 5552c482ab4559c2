"""Prompt templates with {placeholders}: one parser for the API's validation and the optimization flow.

Plain names only. The flow fills templates with str.format_map, where `{a.b}`, `{a[0]}`, `{0}`, `{}`, `{a!r}` or
`{a:>99999999}` would read attributes, crash or blow a prompt up to gigabytes. `{{` and `}}` are literal braces.
"""

from __future__ import annotations

import string


class TemplateError(ValueError):
    def __init__(self, message: str, placeholder: str | None = None) -> None:
        super().__init__(message)
        self.placeholder = placeholder


def placeholders(template: str) -> list[str]:
    """The placeholder names in order of first appearance; TemplateError for anything but plain names."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise TemplateError(f"template is not a valid placeholder template ({exc}); use {{name}} for fields and "
                            "{{ }} for literal braces") from None
    names = []
    for _, name, spec, conversion in parts:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise TemplateError(f"template placeholder {shown} is not a plain name; write {{name}} (no attributes,"
                                " indexes, conversions or format specs) and {{ }} for literal braces", shown)
        names.append(name)
    return list(dict.fromkeys(names))


def fill(template: str, values: dict[str, str]) -> str:
    """The template with each placeholder replaced by its value ('' when missing), braces unescaped."""
    return template.format_map({k: values.get(k, "") for k in placeholders(template)})
