"""The API's public routes, as tests name and enumerate them."""

from __future__ import annotations

SELECT = "/v2/modelRouter/modelSelect"

def public_routes_with_path_parameters(app) -> set[str]:
    """The API's own routes (/v2, in the OpenAPI document): not the docs' /schema/{path} nor /internal."""
    return {route.path for route in app.routes if route.path.startswith("/v2/") and route.path_parameters
            and any(h.include_in_schema for h in getattr(route, "route_handlers", []))}
