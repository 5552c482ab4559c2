"""/schema works without internet: the viewer's script and styles are served by the API itself (api/openapi_viewer.py),
and a headless Chromium renders the page (skipped, with the reason, where no chromium is installed)."""

from __future__ import annotations

import base64
import re

import pytest

from tests.support.chromium import Chromium, find_chromium
from tests.support.service import running_api


def test_the_viewer_page_loads_only_from_this_server(client):
    page = client.get("/schema")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    sources = re.findall(r"(?:src|href)='([^']+)'", page.text)
    assert sources and all(s.startswith("/schema/assets/") for s in sources)  # nothing from a CDN
    assert "https://" not in page.text.split("SwaggerUIBundle({spec:")[0]
    for source in sources:
        asset = client.get(source)
        assert asset.status_code == 200 and len(asset.content) > 1000, source
    assert client.get("/schema/assets/swagger-ui-bundle.js").headers["content-type"].startswith(
        "application/javascript")
    assert client.get("/schema/assets/..%2Fsettings.py").status_code == 404
    assert client.get("/schema/openapi.json").json()["info"]["title"] == "switchboard"


@pytest.mark.skipif(find_chromium() is None, reason="no chromium on PATH (Debian package `chromium`)")
def test_schema_renders_in_a_browser_without_network(tmp_path):
    with running_api() as api:
        browser = Chromium(find_chromium())  # type: ignore[arg-type]
        try:
            page = browser.new_page()
            page.goto(f"{api.base}/schema")
            page.wait_for("document.querySelector('.swagger-ui .info .title') !== null")
            assert "switchboard" in page.text()
            assert page.evaluate("document.querySelectorAll('.opblock').length") > 10  # the operations are listed
            hosts = page.evaluate("performance.getEntriesByType('resource').map(e => new URL(e.name).host)")
            assert set(hosts) <= {api.base.removeprefix("http://")}  # every asset from this server
            shot = base64.b64decode(page.call("Page.captureScreenshot", format="png")["data"])
            (tmp_path / "schema.png").write_bytes(shot)
            assert shot.startswith(b"\x89PNG") and len(shot) > 10_000
            page.close()
        finally:
            browser.close()
