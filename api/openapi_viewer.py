"""/schema without internet: Swagger UI from files on this machine instead of a CDN (Litestar's viewers all load
theirs from one, so without a network /schema was a blank page). The Swagger UI bundle and stylesheet come from the
LiteLLM package already installed (litellm/proxy/swagger/, where its own proxy serves them from); the package is
located, never imported (LiteLLM's import is heavy and stays off the API, docs/architecture.md rule 3).
/schema/openapi.json and /schema/openapi.yaml stay as they were."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

from litestar import Request, Response, get
from litestar.openapi.plugins import JsonRenderPlugin, OpenAPIRenderPlugin, YamlRenderPlugin
from litestar.params import FromPath

from api.errors import NotFound

ASSETS_PATH = "/schema/assets"
ASSETS = {"swagger-ui-bundle.js": "application/javascript", "swagger-ui.css": "text/css",
          "favicon.png": "image/png"}


@cache
def assets_dir() -> Path | None:
    spec = importlib.util.find_spec("litellm")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "proxy" / "swagger"
    return folder if (folder / "swagger-ui-bundle.js").is_file() else None


@get(f"{ASSETS_PATH}/{{name:str}}", include_in_schema=False, sync_to_thread=False, cache=3600)
def viewer_asset(name: FromPath[str]) -> Response:
    folder = assets_dir()
    if name not in ASSETS or folder is None:
        raise NotFound(f"no viewer asset {name!r}", code="NOT_FOUND")
    return Response(content=(folder / name).read_bytes(), media_type=ASSETS[name],
                    headers={"cache-control": "public, max-age=86400"})


class LocalSwaggerPlugin(OpenAPIRenderPlugin):
    """Swagger UI at /schema (and /schema/swagger), its script and styles served by viewer_asset."""

    def __init__(self) -> None:
        super().__init__(path=["/", "/swagger"],
                         favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon.png'>")

    def render(self, request: Request, openapi_schema: dict[str, Any]) -> bytes:
        title = str(openapi_schema.get("info", {}).get("title", "API"))
        head = (f"<head><title>{title}</title>{self.favicon}<meta charset='utf-8'/>"
                "<meta name='viewport' content='width=device-width, initial-scale=1'>"
                f"<link href='{ASSETS_PATH}/swagger-ui.css' rel='stylesheet'>"
                f"<script src='{ASSETS_PATH}/swagger-ui-bundle.js'></script>{self.style}</head>")
        body = (b"<body><div id='swagger-container'></div><script type='text/javascript'>"
                b"window.ui = SwaggerUIBundle({spec: " + self.render_json(request, openapi_schema)
                + b", dom_id: '#swagger-container', deepLinking: true, presets: [SwaggerUIBundle.presets.apis],"
                  b" layout: 'BaseLayout'});</script></body>")
        return b"<!DOCTYPE html><html>" + head.encode() + body + b"</html>"


def render_plugins() -> list[OpenAPIRenderPlugin]:
    return [LocalSwaggerPlugin(), JsonRenderPlugin(), YamlRenderPlugin()]

