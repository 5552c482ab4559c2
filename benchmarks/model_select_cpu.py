"""CPU time per modelSelect request in process: the Litestar app as ASGI through its TestClient (no granian, no
sockets), 4 catalogue candidates, 200 warm-up requests then 3 x 500 timed with `time.process_time`.

    .venv/bin/python -m benchmarks.model_select_cpu
    cd <another source tree> && /path/to/.venv/bin/python /path/to/benchmarks/model_select_cpu.py   # compare builds

It imports the `api` package of the current directory (it checks), so one script compares two source trees with
the same venv; alternate the trees, since the machine's load moves the figures.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.getcwd())
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["SWITCHBOARD_DATA_DIR"] = tempfile.mkdtemp(prefix="switchboard-bench-")

BODY = {"messages": [{"role": "user", "content": "Explain the difference between a list and a tuple in Python. " * 10}],
        "llm_providers": [{"provider": "openai", "model": m} for m in ("gpt-4o", "gpt-4o-mini", "gpt-4.1",
                                                                         "gpt-4.1-mini")]}


def main() -> None:
    # lazy: the environment above must be set before the project is imported
    import api
    from api.app import create_app
    from litestar.testing import TestClient

    assert api.__file__.startswith(os.getcwd()), f"imported {api.__file__}, not this tree's api"
    with TestClient(create_app(publish_owner=False)) as client:
        client.app.state.services.authenticator.rate_limiter = None
        key = client.app.state.services.store.accounts.issue_key("bench").key
        headers = {"Authorization": f"Bearer {key}"}
        for _ in range(200):
            client.post("/v2/modelRouter/modelSelect", json=BODY, headers=headers)
        runs = []
        for _ in range(3):
            began = time.process_time()
            for _ in range(500):
                assert client.post("/v2/modelRouter/modelSelect", json=BODY, headers=headers).status_code == 200
            runs.append((time.process_time() - began) / 500 * 1e6)
    print(f"{os.getcwd()}: CPU per modelSelect request, 3 x 500: {' / '.join(f'{r:,.0f}' for r in runs)} us; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
