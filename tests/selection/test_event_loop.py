"""modelSelect keeps the event loop free: what may wait or work for milliseconds runs in a worker thread (a
preference not cached yet, which is a call to the store owner, a very large prompt); the default path and custom
routers, which never run a transformer, stay on the loop (a thread hop would cost more than their ~0.3 ms)."""

from __future__ import annotations

import asyncio

from api.selection.service import NoCustomRouters

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
