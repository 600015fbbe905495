"""The served env's shapes in a server's OpenAPI document (``/openapi.json``).

One app class serves every env, so its body models declare ``action`` and ``observation`` as
any JSON value; :func:`typed_openapi` puts the served env's own schemas there, from its
pydantic models where it has them, else from its spaces (:func:`space_schema`), so that a
client generated from the document (Go, TypeScript) gets typed fields.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from fastapi import FastAPI

__all__ = ["typed_openapi", "space_schema"]


def typed_openapi(app: FastAPI, spec: dict[str, Any]) -> None:
    """Put the served env's action and observation schemas into ``app``'s ``/openapi.json``
    (before, a generated client got an untyped field and no word of what a step takes).

    Args:
        app: The server's app (one env per server).
        spec: The env's ``GET /spec`` reply: its spaces, and its models' JSON schemas.
    """
    build = app.openapi
    # Gym-v0 takes a Box action as sent: the served env decides its bounds, not the space. A
    # Box inside a Dict or Tuple action is checked against the space, bounds and all.
    as_sent = spec.get("actions_as_sent") and spec["action_space"].get("type") == "Box"
    action = _schema_of(spec, "action", bounds=not as_sent)
    observation = _schema_of(spec, "observation", reply=True)

    def openapi() -> dict[str, Any]:
        doc = build()  # cached by FastAPI; the assignments below are the same every time
        models = doc["components"]["schemas"]
        for model, field, schema in (("StepRequest", "action", action),
                                     ("StepResponse", "observation", observation),
                                     ("ResetResponse", "observation", observation)):
            described = models[model]["properties"][field]
            models[model]["properties"][field] = {
                **schema, **{k: described[k] for k in ("title", "description") if k in described}}
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def _schema_of(spec: dict[str, Any], kind: str, reply: bool = False, bounds: bool = True) -> dict[str, Any]:
    """The JSON Schema of the env's ``kind`` ("action", "observation"): its pydantic model's,
    else its space's."""
    model = spec.get(f"{kind}_schema")
    if model and "$defs" not in model:  # a model's "$defs" refs point into itself, not the document
        return model
    return space_schema(spec[f"{kind}_space"], reply=reply, bounds=bounds)


def space_schema(space: dict[str, Any], reply: bool = False, bounds: bool = True) -> dict[str, Any]:
    """The JSON Schema of a value of a space, given in ``GET /spec``'s form.

    Args:
        space: A space as ``/spec`` describes it (``{"type": "Box", ...}``).
        reply: The value is sent by the server: a non-finite float arrives as ``null``.
        bounds: Include a ``Box``'s uniform bounds (off where the env takes any value).

    Returns:
        A JSON Schema (2020-12, as OpenAPI 3.1 uses); ``{}`` (any value) for the space types
        JSON Schema cannot describe usefully (``Sequence``, ``OneOf``, ``Graph``).

    Example:
        >>> space_schema({"type": "Discrete", "n": 2, "start": 0})
        {'type': 'integer', 'minimum': 0, 'maximum': 1}
    """
    kind = space.get("type")
    if kind == "Discrete":
        return {"type": "integer", "minimum": space["start"], "maximum": space["start"] + space["n"] - 1}
    if kind in ("Text", "UnicodeText"):
        return {"type": "string", "minLength": space["min_length"], "maxLength": space["max_length"]}
    if kind == "Dict":
        fields = {k: space_schema(v, reply, bounds) for k, v in space["spaces"].items()}
        return {"type": "object", "properties": fields, "required": list(fields),
                "additionalProperties": False}
    if kind == "Tuple":
        items = [space_schema(v, reply, bounds) for v in space["spaces"]]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if kind == "Box":
        return _nested(space["shape"], _number(space, reply, bounds))
    if kind == "MultiDiscrete":
        shape = list(np.shape(space["nvec"]))
        return _nested(shape, {"type": "integer"})
    if kind == "MultiBinary":
        return _nested(list(space["n"]), {"type": "integer", "minimum": 0, "maximum": 1})
    return {}


def _number(box: dict[str, Any], reply: bool, bounds: bool) -> dict[str, Any]:
    """The schema of one element of a ``Box``."""
    kind = box["dtype"][1]  # "<f4" -> "f"
    if kind == "b":
        return {"type": "boolean"}
    item: dict[str, Any] = {"type": "integer" if kind in "iu" else "number"}
    for key, word in (("low", "minimum"), ("high", "maximum")):
        value = box.get(key)
        if bounds and isinstance(value, (int, float)):  # uniform and finite ("inf" is text)
            item[word] = value
    if reply and item["type"] == "number":
        item = {"anyOf": [item, {"type": "null"}]}  # a non-finite float is written as null
    return item


def _nested(shape: list[int], item: dict[str, Any]) -> dict[str, Any]:
    """``item`` in nested arrays of ``shape`` (a bare item for shape ``[]``)."""
    for size in reversed(shape):
        item = {"type": "array", "items": item, "minItems": size, "maxItems": size}
    return item
