"""A promoted correction reaches an API worker in another process through the store owner's change feed."""

from __future__ import annotations

import time

from api.routing.features import FEATURE_VERSION
from api.selection.learned import LearnedCorrections
from storage import owner
from tests.learning.test_versions import params
from tests.support.api_server import ApiServer


def test_a_worker_behind_the_owner_follows_promotion_and_rollback(tmp_path):
    server = ApiServer(tmp_path / "data")
    flow, worker = None, None
    try:
        flow = owner.open_store(server.db_path, server.run_dir)    # the flow run's store: RPC to the owner
        worker = owner.open_store(server.db_path, server.run_dir)  # another API worker's
        served = LearnedCorrections(worker, FEATURE_VERSION).attach()

        def eventually(expected: str | None) -> str | None:
            deadline = time.monotonic() + 30  # the feed is polled every 0.5 s; this only bounds a broken one
            while True:
                got = served.get("pref")
                if (got.version_id if got else None) == expected or time.monotonic() > deadline:
                    return got.version_id if got else None
                time.sleep(0.1)

        first = flow.learning.record_version("pref", 300, params(0.1, FEATURE_VERSION), "{}", promote=True)
        assert eventually(first.version_id) == first.version_id
        second = flow.learning.record_version("pref", 600, params(0.2, FEATURE_VERSION), "{}", promote=True)
        assert eventually(second.version_id) == second.version_id
        flow.learning.rollback("pref")
        assert eventually(first.version_id) == first.version_id
    finally:
        for store in (flow, worker):
            if store is not None:
                store.close()
        server.kill()
