"""The shapes modelSelect accepts for `messages` and `tools` (docs/api.md): the interface defines messages as a
string or an array of objects whose values are strings or arrays (role, content), and tools in the chat API's tool
format. Anything else is a 400 naming where the problem is, large or small, never a 200 on a guess."""

from __future__ import annotations

import pytest

from api.routing.text import MessageShapeError, message_texts
from tests.support.envelopes import assert_envelope

SELECT = "/v2/modelRouter/modelSelect"
PAIR = [{"provider": "openai", "model": "gpt-4o"}, {"provider": "openai", "model": "gpt-4o-mini"}]
BIG = "lorem ipsum " * 160_000  # 1.9 MB: refused before any of it is read, not worked through on the event loop


def select(client, headers, **body):
    return client.post(SELECT, json={"llm_providers": PAIR, **body}, headers=headers)


@pytest.mark.parametrize("messages, where", [
    ([{"role": "user", "content": {"type": "text", "text": "hi"}}], "messages[0].content"),
    ([{"role": "user", "content": {"type": "text", "text": BIG}}], "messages[0].content"),
    ([{"role": "user", "content": 42}], "messages[0].content"),
    ([{"role": "user", "content": True}], "messages[0].content"),
    ([{"role": "user", "content": ["fine", 7]}], "messages[0].content[1]"),
    ([{"role": "user", "content": [["nested"]]}], "messages[0].content[0]"),
    ([{"role": "user", "content": [{"type": "text", "text": ["not", "a", "string"]}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content[0].text"),
    ([{"role": "system", "content": "ok"}, {"role": 3, "content": "hi"}], "messages[1].role"),
])
def test_shapes_the_interface_does_not_define_are_a_400_naming_where(client, auth, messages, where):
    error = assert_envelope(select(client, auth(), messages=messages), 400, "INVALID_MESSAGES",
                            "invalid_request_error")
    assert error["message"].startswith(where), error["message"]
    assert len(error["message"]) < 300  # never echoes the content


@pytest.mark.parametrize("messages", [
    "a bare string",
    [{"role": "user", "content": "a string"}],
    [{"role": "user", "content": ["a list", "of strings"]}],
    [{"role": "user", "content": [{"type": "text", "text": "typed"},
                                  {"type": "image_url", "image_url": {"url": "x"}}]}],
    [{"role": "user", "content": [{"text": "a part without a type is text"}]}],
    [{"role": "user", "content": "call the tool"}, {"role": "assistant", "content": None, "tool_calls": []}],
])
def test_accepted_shapes_route(client, auth, messages):
    r = select(client, auth(), messages=messages)
    assert r.status_code == 200, r.text


def test_the_reader_refuses_what_the_endpoint_refuses():
    assert message_texts([{"role": "user", "content": ["a", {"type": "text", "text": "b"}]}]) == [("user", "a\nb")]
    with pytest.raises(MessageShapeError, match=r"^messages\[0\]\.content must be a string or an array"):
        message_texts([{"role": "user", "content": {"type": "text", "text": "b"}}])


@pytest.mark.parametrize("tools, where", [
    ([{}], "tools[0]"),
    ([{"type": "function"}], "tools[0]"),
    ([{"type": "browser"}], "tools[0].type"),
    ([{"type": "function", "function": {}}], "tools[0].function"),
    ([{"type": "function", "function": {"name": "has spaces"}}], "tools[0].function.name"),
    ([{"type": "function", "function": {"name": "f", "parameters": "not a schema"}}], "tools[0].function.parameters"),
    ([{"type": "function", "function": {"name": "ok"}}, {"type": "function", "function": {"name": ""}}],
     "tools[1].function.name"),
])
def test_tools_outside_the_chat_tool_format_are_a_400(client, auth, tools, where):
    error = assert_envelope(select(client, auth(), messages="hi", tools=tools), 400, "INVALID_TOOLS",
                            "invalid_request_error")
    assert error["message"].startswith(where + ":"), error["message"]
    assert '"type": "function"' in error["message"]  # says what a tool looks like


def test_tools_in_the_chat_tool_format_route(client, auth):
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                               "parameters": {"type": "object",
                                                              "properties": {"city": {"type": "string"}}},
                                               "strict": True}},
             {"type": "function", "function": {"name": "now"}},
             {"type": "custom", "custom": {"name": "sql", "description": "free-form SQL"}}]
    r = select(client, auth(), messages="What is the weather in Oslo?", tools=tools)
    assert r.status_code == 200, r.text
