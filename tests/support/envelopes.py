"""Assertions on the error envelope and the 422 validation shape, shared by every HTTP test."""

from __future__ import annotations


def assert_envelope(response, status: int, code: str, type_: str) -> dict:
    """The spec's ErrorResponse, with request_id equal to the x-request-id header."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert {"code", "message", "type", "request_id", "details"} <= set(error), error
    assert (error["code"], error["type"]) == (code, type_), error
    assert isinstance(error["message"], str) and error["message"].strip()
    assert error["request_id"] and error["request_id"] == response.headers["x-request-id"]
    return error


def assert_validation_body(response) -> list[dict]:
    """The 422 HTTPValidationError shape: {"detail": [{"loc", "msg", "type"}, ...]}."""
    assert response.status_code == 422, response.text
    body = response.json()
    assert set(body) == {"detail"}, body
    items = body["detail"]
    assert isinstance(items, list) and items
    for item in items:
        assert set(item) == {"loc", "msg", "type"}, item
        assert isinstance(item["loc"], list) and item["loc"]
        assert all(isinstance(part, (str, int)) for part in item["loc"])
        assert isinstance(item["msg"], str) and item["msg"].strip()
        assert isinstance(item["type"], str) and item["type"]
    assert response.headers.get("x-request-id")
    return items


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["code"] == code, body
    return body
