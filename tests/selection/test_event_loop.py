"""modelSelect keeps the event loop free: what may wait or work for milliseconds runs in a worker thread (a
preference not cached yet, which is a call to the store owner, a very large prompt); the default path and custom
routers, which never run a transformer, stay on the loop (a thread hop would cost more than their ~0.3 ms)."""

from __future__ import annotations

import asyncio

import msgspec
import pytest

from api.routing.text import message_texts
from api.schemas.model_select import ModelSelectRequest
from api.selection.service import LARGE_REQUEST_CHARS, NoCustomRouters, request_chars

SELECT = "/v2/modelRouter/modelSelect"


class RecordingRouters(NoCustomRouters):
    """A RouterSource that notes whether it was asked on the event loop."""

    def __init__(self) -> None:
        self.on_event_loop: list[bool] = []

    def for_preference(self, preference):
        try:
            asyncio.get_running_loop()
            self.on_event_loop.append(True)
        except RuntimeError:
            self.on_event_loop.append(False)
        return None  # then the default router decides


def test_a_store_call_runs_off_the_event_loop_and_the_default_path_on_it(client, auth):
    h = auth()
    plain = client.post("/v2/preferences/userPreferenceCreate", headers=h, json={"name": "p"}).json()["preference_id"]
    routers = RecordingRouters()
    client.app.state.services.selection.custom_routers = routers
    body = {"messages": "Translate 'good morning' into Finnish.",
            "llm_providers": [{"provider": "openai", "model": "gpt-4o"},
                              {"provider": "openai", "model": "gpt-4o-mini"}]}

    client.app.state.services.selection.preferences.clear()  # the creates above cached nothing to rely on
    for pid in (plain, plain, None):
        r = client.post(SELECT, headers=h, json={**body, "preference_id": pid} if pid else body)
        assert r.status_code == 200, r.text
    # A preference read from the store: thread; then cached: loop; no preference: loop.
    assert routers.on_event_loop == [False, True, True]
    large = {**body, "messages": "Summarise this. " + "lorem ipsum " * 3_000}
    assert client.post(SELECT, headers=h, json=large).status_code == 200
    assert routers.on_event_loop[-1] is False


BIG = "Summarise this. " + "lorem ipsum " * 3_000  # ~36,000 characters: above LARGE_REQUEST_CHARS
TINY_PARTS = ["a"] * 25_000  # no long string at all: many parts cost work too


@pytest.mark.parametrize("messages", [
    BIG,
    [{"role": "user", "content": BIG}],
    [{"role": "user", "content": [{"type": "text", "text": BIG}]}],
    [{"role": "user", "content": [BIG]}],
    [{"role": "user", "content": [{"type": "text", "text": BIG[:10_000]}, BIG[10_000:]]}],
    [{"role": "user", "content": TINY_PARTS}],
    [{"role": "system", "content": BIG[:15_000]}, {"role": "user", "content": [{"text": BIG[15_000:]}]}],
    [{"role": "user", "content": "hi"}] * 12_000,
    [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 100_000}},
                                  {"type": "text", "text": "What is in this picture?"}]}],
], ids=["string", "content-string", "text-part", "string-part", "mixed-parts", "tiny-parts", "part-without-type",
        "many-messages", "large-image"])
def test_every_accepted_shape_of_a_large_request_runs_off_the_event_loop(client, auth, messages):
    routers = RecordingRouters()
    client.app.state.services.selection.custom_routers = routers
    body = {"messages": messages, "llm_providers": [{"provider": "openai", "model": "gpt-4o"},
                                                   {"provider": "openai", "model": "gpt-4o-mini"}]}
    request = msgspec.convert(body, ModelSelectRequest)
    assert client.app.state.services.selection.may_block(request, len(msgspec.json.encode(body)))
    r = client.post(SELECT, headers=auth(), json=body)
    assert r.status_code == 200, r.text
    assert routers.on_event_loop == [False]


def test_the_size_is_the_text_the_router_reads():
    """request_chars counts the text message_texts() returns (plus one per message and part), whatever the shape;
    parts without text (an image) count one, never their payload."""
    for messages in (BIG, [{"role": "user", "content": BIG}], [{"role": "user", "content": [BIG]}],
                     [{"content": [{"text": BIG}]}]):
        req = ModelSelectRequest(messages=messages, llm_providers=[])
        read = sum(len(text) for _, text in message_texts(messages))
        assert read < request_chars(req) <= read + 2 + LARGE_REQUEST_CHARS  # counting stops past the threshold
    image = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:" + "A" * 50_000}},
                                          {"type": "text", "text": "what is this?"}]}]
    assert request_chars(ModelSelectRequest(messages=image, llm_providers=[])) == 1 + len("what is this?") + 1
