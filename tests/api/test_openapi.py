"""The OpenAPI document served at /schema/openapi.json: operation names, security, body schemas, and what is hidden."""

from __future__ import annotations

import pytest

PUBLIC = {
    ("/v2/models", "get"): "listModels",
    ("/v2/preferences/userPreferenceCreate", "post"): "userPreferenceCreate",
    ("/v2/preferences/userPreferenceUpdate", "put"): "userPreferenceUpdate",
    ("/v2/preferences/userPreferenceDelete/{preference_id}", "delete"): "userPreferenceDelete",
}
SECURED = [op for op in PUBLIC.values() if op != "listModels"]


@pytest.fixture
def doc(client) -> dict:
    response = client.get("/schema/openapi.json")
    assert response.status_code == 200
    assert "json" in response.headers["content-type"]  # application/vnd.oai.openapi+json
    return response.json()


def operations(doc: dict) -> dict[str, dict]:
    return {op["operationId"]: op for path in doc["paths"].values() for op in path.values()
            if isinstance(op, dict) and "operationId" in op}


def resolve(doc: dict, schema: dict) -> dict:
    while "$ref" in schema:
        name = schema["$ref"].removeprefix("#/components/schemas/")
        schema = doc["components"]["schemas"][name]
    return schema


def body_schema(doc: dict, op: dict) -> dict:
    return resolve(doc, op["requestBody"]["content"]["application/json"]["schema"])


def response_schema(doc: dict, op: dict, status: str = "200") -> dict:
    return resolve(doc, op["responses"][status]["content"]["application/json"]["schema"])


def test_document_is_openapi_3_with_our_title(doc):
    assert doc["openapi"].startswith("3.")
    assert doc["info"]["title"] and doc["info"]["version"] == "0.1.0"


def test_every_public_path_has_the_specs_operation_name(doc):
    for (path, method), operation_id in PUBLIC.items():
        assert path in doc["paths"], sorted(doc["paths"])
        assert doc["paths"][path][method]["operationId"] == operation_id


def test_operation_ids_are_unique(doc):
    ids = [op["operationId"] for path in doc["paths"].values() for op in path.values()
           if isinstance(op, dict) and "operationId" in op]
    assert len(ids) == len(set(ids))


def test_internal_paths_are_hidden(doc):
    assert not [p for p in doc["paths"] if p.startswith("/internal")]
    assert "rpc" not in str(doc["paths"]).lower()


def test_bearer_security_scheme_is_declared(doc):
    schemes = doc["components"]["securitySchemes"]
    bearer = [name for name, s in schemes.items() if s.get("type") == "http" and s.get("scheme") == "bearer"]
    assert len(bearer) == 1


def test_preference_endpoints_require_bearer_and_models_does_not(doc):
    schemes = doc["components"]["securitySchemes"]
    ops = operations(doc)
    for operation_id in SECURED:
        security = ops[operation_id].get("security")
        assert security, operation_id
        names = {name for requirement in security for name in requirement}
        assert names and all(schemes[n]["scheme"] == "bearer" for n in names), operation_id
    assert not ops["listModels"].get("security")
    assert not doc.get("security")  # no global requirement that would cover /v2/models


def test_create_body_has_an_optional_name(doc):
    op = operations(doc)["userPreferenceCreate"]
    schema = body_schema(doc, op)
    assert "name" in schema["properties"]
    assert "name" not in schema.get("required", [])
    assert "preference_id" in response_schema(doc, op)["properties"]
    assert "preference_id" in response_schema(doc, op).get("required", [])


def test_update_body_requires_preference_id(doc):
    op = operations(doc)["userPreferenceUpdate"]
    schema = body_schema(doc, op)
    assert op["requestBody"].get("required") is True
    assert {"preference_id", "name"} <= set(schema["properties"])
    assert schema["required"] == ["preference_id"]
    # The routing defaults a preference carries are documented in the schema too.
    assert {"tradeoff", "cost_quality_tradeoff", "max_model_depth"} <= set(schema["properties"])


def test_delete_takes_preference_id_in_the_path(doc):
    op = operations(doc)["userPreferenceDelete"]
    params = {p["name"]: p for p in op["parameters"]}
    assert params["preference_id"]["in"] == "path" and params["preference_id"]["required"] is True


def test_list_models_query_parameters_and_response(doc):
    op = operations(doc)["listModels"]
    params = {p["name"]: p for p in op["parameters"]}
    assert {"provider", "aggregator_only"} <= set(params)
    assert all(p["in"] == "query" and not p.get("required") for p in params.values())
    provider_schema = str(params["provider"]["schema"])
    assert "array" in provider_schema
    body = response_schema(doc, op)
    assert set(body["required"]) == {"models", "total", "deprecated_models"}
    model = resolve(doc, body["properties"]["models"]["items"])
    assert {"provider", "model", "context_length", "input_price", "output_price"} <= set(model["required"])
    assert "aggregator_model" in model["properties"]


def test_documented_error_responses_use_the_envelope(doc):
    # Generated clients parse errors by these schemas: they must describe the body the service really sends.
    seen = 0
    for operation_id, op in operations(doc).items():
        for status, response in op["responses"].items():
            if status.startswith(("4", "5")) and status != "422" and "content" in response:
                schema = resolve(doc, response["content"]["application/json"]["schema"])
                assert "error" in schema.get("properties", {}), (operation_id, status, schema)
                body = resolve(doc, schema["properties"]["error"])
                assert {"code", "message", "type"} <= set(body.get("required", [])), (operation_id, status)
                assert "request_id" in body["properties"] and "details" in body["properties"]
                seen += 1
    assert seen >= len(PUBLIC)


def test_422_is_documented_everywhere_and_401_wherever_security_is_declared(doc):
    for operation_id, op in operations(doc).items():
        assert "422" in op["responses"], operation_id
        schema = resolve(doc, op["responses"]["422"]["content"]["application/json"]["schema"])
        item = resolve(doc, schema["properties"]["detail"]["items"])
        assert {"loc", "msg", "type"} <= set(item["properties"])
        if op.get("security"):
            assert "401" in op["responses"], operation_id
    assert "401" not in operations(doc)["listModels"]["responses"]
