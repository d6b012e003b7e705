"""JSON schemas made to end: the copy of a schema llguidance compiles for a forced tool call or a JSON
response_format, so the model cannot write past the request's max_tokens inside it.

- An object that lists its properties takes only those (each key once) unless the schema says
  additionalProperties; in tool arguments an object that lists none takes none (allOf branches stay open).
- An open object (no properties listed, or extra properties allowed) gets keys of at most KEY_CHARS
  characters and a maxProperties where llguidance can apply one (all listed properties required).
- A string without maxLength, format or pattern gets a maxLength; an array without maxItems a maxItems;
  an integer without bounds 16 digits at most; "any value" is any value nested MAX_DEPTH deep at most.

The default maxLength / maxItems are the largest on a ladder whose worst case (about a token per
character) fits the token budget, so the JSON can close within max_tokens.
"""

from __future__ import annotations

import json
from typing import Any

from specchat.engine.json_types import JSONObject, as_list

KEY_CHARS = 64
INT_BOUND = 10**15
MAX_DEPTH = 2
LENGTHS = (4096, 2048, 1024, 512, 256, 128, 64, 32, 16, 8, 4, 2, 1)
_COMBINERS = ("anyOf", "oneOf", "allOf")
_MAPS = ("properties", "$defs", "definitions", "dependentSchemas")


def bounded_schema(schema: JSONObject, budget: int, closed: bool = False) -> JSONObject:
    """The schema with the bounds above whose worst case fits `budget` tokens (the smallest if none does);
    closed: objects take only their listed properties unless the schema allows more (tool arguments)."""
    out: JSONObject = {}
    for length in LENGTHS:
        out = _Bounder(length, max(1, min(64, length // 16)), closed).node(schema)
        if worst_case(out, out) <= budget:
            return out
    return out


class _Bounder:
    """One pass over a schema with a default maxLength and maxItems."""

    def __init__(self, length: int, items: int, closed: bool):
        self.length, self.items, self.closed = length, items, closed

    def node(self, schema: object, part: bool = False) -> Any:
        """A bounded copy of one subschema (True: any value, bounded); part: an allOf branch, whose objects are
        left open (closing each branch would refuse the other branches' keys)."""
        if schema is True or schema == {}:
            return self.any_value(MAX_DEPTH)
        if not isinstance(schema, dict):
            return schema
        out = dict(schema)
        for key in _COMBINERS + ("prefixItems",):
            if isinstance(out.get(key), list):
                out[key] = [self.node(s, key == "allOf") for s in out[key]]
        for key in _MAPS + ("patternProperties",):
            if isinstance(out.get(key), dict):
                out[key] = {k: self.node(s) for k, s in out[key].items()}
        for key in ("items", "if", "then", "else", "additionalItems"):
            if key in out:
                out[key] = self.node(out[key])
        if "const" in out or "enum" in out:
            return out
        kinds = _types(out)
        if "string" in kinds and "maxLength" not in out and "format" not in out and "pattern" not in out:
            out["maxLength"] = max(self.length, _int(out.get("minLength"), 0))
        if "integer" in kinds and not ("minimum" in out or "exclusiveMinimum" in out):
            out["minimum"] = -INT_BOUND
        if "integer" in kinds and not ("maximum" in out or "exclusiveMaximum" in out):
            out["maximum"] = INT_BOUND
        if "array" in kinds and "maxItems" not in out:
            out["maxItems"] = max(self.items, _int(out.get("minItems"), 0))
        if "object" in kinds and not part and "allOf" not in out:
            self.object(out)
        return out

    def object(self, out: JSONObject) -> None:
        """Close an object to its properties, or bound its extra keys and their number."""
        extra = out.get("additionalProperties")
        if extra is False:
            return
        if extra is None and (self.closed or "properties" in out) and "patternProperties" not in out:
            out["additionalProperties"] = False
            return
        value = self.any_value(MAX_DEPTH) if extra in (None, True) else self.node(extra)
        if "patternProperties" not in out:
            out["patternProperties"] = {f"^.{{1,{KEY_CHARS}}}$": value}
            out["additionalProperties"] = False
        listed, required = _map(out.get("properties")), out.get("required")
        if "maxProperties" not in out and all(k in (required if isinstance(required, list) else ()) for k in listed):
            out["maxProperties"] = max(len(listed) + self.items, _int(out.get("minProperties"), 0))

    def any_value(self, depth: int) -> JSONObject:
        """Any JSON value, nested `depth` deep at most, its strings, arrays and objects bounded."""
        scalars: list[JSONObject] = [
            {"type": "string", "maxLength": self.length},
            {"type": "integer", "minimum": -INT_BOUND, "maximum": INT_BOUND},
            {"type": "number"},
            {"type": "boolean"},
            {"type": "null"},
        ]
        if depth > 0:
            inner = self.any_value(depth - 1)
            scalars.append({"type": "array", "items": inner, "maxItems": self.items})
            scalars.append(
                {
                    "type": "object",
                    "patternProperties": {f"^.{{1,{KEY_CHARS}}}$": inner},
                    "additionalProperties": False,
                    "maxProperties": self.items,
                }
            )
        return {"anyOf": scalars}


def _types(schema: JSONObject) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {k for k in kind if isinstance(k, str)}
    found = set()
    if "properties" in schema or "additionalProperties" in schema:
        found.add("object")
    if "items" in schema or "prefixItems" in schema:
        found.add("array")
    return found


def _map(value: object) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _int(value: object, default: int) -> int:
    """A schema's number as an int (default when it is not a number: llguidance reports the schema's error)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) > 1e18:
        return default
    return int(value)


NUMBER_TOKENS = 24  # a number without bounds on its fraction (llguidance does not bound it): an estimate


def worst_case(schema: object, root: object, refs: int = 0) -> int:
    """About the most tokens a value of the (bounded) schema takes: a token per character, JSON's punctuation."""
    if not isinstance(schema, dict):
        return 0 if schema is False else NUMBER_TOKENS
    if "const" in schema:
        return len(json.dumps(schema["const"]))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return max(len(json.dumps(v)) for v in schema["enum"])
    if isinstance(schema.get("$ref"), str):
        return worst_case(_resolve(schema["$ref"], root), root, refs + 1) if refs < 4 else NUMBER_TOKENS
    branches = [s for key in _COMBINERS for s in schema.get(key, []) if isinstance(schema.get(key), list)]
    if branches:
        return max(worst_case(s, root, refs) for s in branches)
    kinds = _types(schema) or {"number"}
    return max(_kind_cost(kind, schema, root, refs) for kind in kinds)


def _kind_cost(kind: str, schema: JSONObject, root: object, refs: int) -> int:
    if kind == "string":
        guess = 64 if "format" in schema else 2 * len(str(schema.get("pattern", "")))
        return 2 + _int(schema.get("maxLength"), guess)
    if kind == "integer":
        low, high = _int(schema.get("minimum"), -INT_BOUND), _int(schema.get("maximum"), INT_BOUND)
        return 2 + len(str(max(abs(low), abs(high))))
    if kind in ("boolean", "null"):
        return 2
    if kind == "array":
        fixed = sum(1 + worst_case(s, root, refs) for s in as_list(schema.get("prefixItems")))
        return 2 + fixed + _int(schema.get("maxItems"), 64) * (1 + worst_case(schema.get("items", {}), root, refs))
    if kind == "object":
        return _object_cost(schema, root, refs)
    return NUMBER_TOKENS


def _object_cost(schema: JSONObject, root: object, refs: int) -> int:
    listed = _map(schema.get("properties"))
    cost = 2 + sum(len(key) + 4 + worst_case(s, root, refs) for key, s in listed.items())
    patterns = list(_map(schema.get("patternProperties")).values())
    if patterns:
        extra = max(worst_case(s, root, refs) for s in patterns)
        count = _int(schema.get("maxProperties"), len(listed) + 64) - len(listed)
        cost += max(0, count) * (KEY_CHARS + 4 + extra)
    return cost


def _resolve(ref: str, root: object) -> object:
    """The subschema a local $ref ("#/$defs/x") points at ({} when it is not local or not found)."""
    if not ref.startswith("#"):
        return {}
    node = root
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        if not isinstance(node, dict):
            return {}
        node = node.get(part.replace("~1", "/").replace("~0", "~"), {})
    return node
