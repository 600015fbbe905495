"""A body nested deeper than Python's JSON reader goes is a 422 that says so, like any body
that is not valid JSON (it was a 400 "There was an error parsing the body")."""

from __future__ import annotations

import requests


def test_deeply_nested_body_is_a_422_naming_the_nesting(served_echo) -> None:
    depth = 5000
    body = b'{"options": {"a": ' + b"[" * depth + b"]" * depth + b"}}"
    reply = requests.post(served_echo.http + "/reset", data=body,
                          headers={"content-type": "application/json"}, timeout=30)
    assert reply.status_code == 422
    error = reply.json()["error"]
    assert error["type"] == "InvalidRequestError"
    assert "not valid JSON" in error["message"] and "nests" in error["message"]
    # The server serves on.
    assert requests.post(served_echo.http + "/reset", json={}, timeout=30).status_code == 200
