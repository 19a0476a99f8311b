"""The export format's values: an AMQP value as JSON and back, each with its type's name
(:func:`value_to_json`, :func:`value_from_json`; re-exported by :mod:`sbmgmt.actions.export`,
whose docstring describes the format)."""

from __future__ import annotations

import base64
import json
import math
import uuid
from collections.abc import Callable
from typing import Any

from proton import (
    UNDESCRIBED,
    Array,
    Data,
    Described,
    byte,
    char,
    decimal32,
    decimal64,
    decimal128,
    float32,
    int32,
    short,
    symbol,
    timestamp,
    ubyte,
    uint,
    ulong,
    ushort,
)

__all__ = ["ULONG_KEY", "value_from_json", "value_to_json"]


def _float_to_json(value: float) -> float | str:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _float_from_json(value: Any) -> float:
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.lower().replace("infinity", "inf"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{value!r} is not a number")
    return float(value)


def _int_from_json(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{value!r} is not an integer")
    return value


def _bool_from_json(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{value!r} is not a boolean")
    return value


def _text_from_json(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not a string")
    return value


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


def _bytes_from_json(value: Any) -> bytes:
    try:
        return base64.b64decode(_text_from_json(value), validate=True)
    except (ValueError, TypeError):
        raise ValueError(f"{value!r} is not base64") from None


#: The AMQP types that are a JSON number or text under their name: type -> (name, to JSON).
_SCALARS: dict[type, tuple[str, Callable[[Any], Any]]] = {
    ubyte: ("ubyte", int), ushort: ("ushort", int), uint: ("uint", int),
    ulong: ("ulong", int), byte: ("byte", int), short: ("short", int), int32: ("int", int),
    int: ("long", int), float32: ("float", _float_to_json), float: ("double", _float_to_json),
    timestamp: ("timestamp", int), decimal32: ("decimal32", int),
    decimal64: ("decimal64", int), decimal128: ("decimal128", lambda v: bytes(v).hex()),
    char: ("char", str), symbol: ("symbol", str), uuid.UUID: ("uuid", str),
    bytes: ("binary", _b64),
}

#: Name -> what makes the AMQP value of its JSON.
_FROM_JSON: dict[str, Callable[[Any], Any]] = {
    "ubyte": lambda v: ubyte(_int_from_json(v)),
    "ushort": lambda v: ushort(_int_from_json(v)),
    "uint": lambda v: uint(_int_from_json(v)),
    "ulong": lambda v: ulong(_int_from_json(v)),
    "byte": lambda v: byte(_int_from_json(v)),
    "short": lambda v: short(_int_from_json(v)),
    "int": lambda v: int32(_int_from_json(v)),
    "long": _int_from_json,
    "float": lambda v: float32(_float_from_json(v)),
    "double": _float_from_json,
    "timestamp": lambda v: timestamp(_int_from_json(v)),
    "decimal32": lambda v: decimal32(_int_from_json(v)),
    "decimal64": lambda v: decimal64(_int_from_json(v)),
    "decimal128": lambda v: decimal128(bytes.fromhex(_text_from_json(v))),
    "char": lambda v: char(_text_from_json(v)),
    "symbol": lambda v: symbol(_text_from_json(v)),
    "uuid": lambda v: uuid.UUID(_text_from_json(v)),
    "binary": _bytes_from_json,
}

#: An array's element type: proton's code <-> its name in the format.
_ARRAY_TYPES = {getattr(Data, name.upper()): name for name in (
    "bool", "ubyte", "ushort", "uint", "ulong", "byte", "short", "int", "long", "float",
    "double", "decimal32", "decimal64", "decimal128", "char", "timestamp", "uuid", "binary",
    "string", "symbol", "list", "map", "array", "described", "null")}
_ARRAY_CODES = {name: code for code, name in _ARRAY_TYPES.items()}
#: An array of a scalar type has its elements as that type's JSON, without the type's name.
_ELEMENT_TO_JSON: dict[str, Callable[[Any], Any]] = {
    **{name: convert for name, convert in _SCALARS.values()}, "string": str, "bool": bool}
_ELEMENT_FROM_JSON: dict[str, Callable[[Any], Any]] = {
    **_FROM_JSON, "string": _text_from_json, "bool": _bool_from_json}


def value_to_json(value: Any) -> Any:
    """An AMQP value (as sbmgmt decodes it) as the format's JSON value.

    A string, a boolean and null are themselves; every other value is an object of one key,
    its AMQP type's name: ``ubyte``, ``ushort``, ``uint``, ``ulong``, ``byte``, ``short``,
    ``int``, ``long`` (numbers), ``float``, ``double`` (numbers, or ``"NaN"``,
    ``"Infinity"``, ``"-Infinity"``), ``timestamp`` (milliseconds since the Unix epoch),
    ``decimal32`` / ``decimal64`` (their bits as an unsigned number), ``decimal128`` (hex),
    ``char``, ``symbol``, ``uuid`` (text), ``binary`` (base64), ``list`` (an array of
    values), ``map`` (an array of ``[key, value]`` pairs), ``array`` (``{"type": ...,
    "elements": [...]}``, each element as its type's JSON without the name when the type is
    not a compound, and ``"descriptor"`` if described) and ``described``
    (``{"descriptor": ..., "value": ...}``).

    Args:
        value: The value: proton's typed values, ``int`` (long), ``float`` (double),
            ``str``, ``bytes``, ``uuid.UUID``, ``bool``, ``None``, lists, dicts.

    Returns:
        Its JSON (what ``json.dumps`` takes).

    Raises:
        TypeError: The value has no AMQP type (a ``set``, a ``datetime``...).
    """
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    scalar = _SCALARS.get(kind)
    if scalar is not None:
        return {scalar[0]: scalar[1](value)}
    if kind is list or kind is tuple:
        return {"list": [value_to_json(item) for item in value]}
    if kind is dict:
        return {"map": [[value_to_json(k), value_to_json(v)] for k, v in value.items()]}
    if kind is Array:
        name = _ARRAY_TYPES[value.type]
        element = _ELEMENT_TO_JSON.get(name, value_to_json)
        array: dict[str, Any] = {"type": name,
                                 "elements": [element(item) for item in value.elements]}
        if value.descriptor is not UNDESCRIBED:
            array["descriptor"] = value_to_json(value.descriptor)
        return {"array": array}
    if kind is Described:
        return {"described": {"descriptor": value_to_json(value.descriptor),
                              "value": value_to_json(value.value)}}
    if kind is bytearray or kind is memoryview:
        return {"binary": _b64(bytes(value))}
    raise TypeError(f"{kind.__name__} is not an AMQP value")


def value_from_json(value: Any) -> Any:
    """The AMQP value of the format's JSON value (:func:`value_to_json`'s inverse).

    Args:
        value: The JSON value.

    Returns:
        The AMQP value, of the type the JSON names.

    Raises:
        ValueError: The JSON is not a value of the format (an unknown type name, a number
            where text belongs...).
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"{json.dumps(value)[:80]} is not a typed value (an object of one "
                         "key, the AMQP type)")
    ((name, inner),) = value.items()
    convert = _FROM_JSON.get(name)
    if convert is not None:
        try:
            return convert(inner)
        except (ValueError, TypeError, OverflowError) as exc:
            raise ValueError(f"{name}: {exc}") from None
    if name == "list" and isinstance(inner, list):
        return [value_from_json(item) for item in inner]
    if name == "map" and isinstance(inner, list):
        return _map_from_json(inner)
    if name == "array" and isinstance(inner, dict):
        code = _ARRAY_CODES.get(inner.get("type"))  # type: ignore[arg-type]
        if code is None or not isinstance(inner.get("elements"), list):
            raise ValueError(f"array: {json.dumps(inner)[:80]} has no known type and elements")
        # (proton's stubs type the descriptor as data; UNDESCRIBED is its documented marker)
        descriptor: Any = (value_from_json(inner["descriptor"]) if "descriptor" in inner
                           else UNDESCRIBED)
        element = _ELEMENT_FROM_JSON.get(inner["type"], value_from_json)
        return Array(descriptor, code, *(element(e) for e in inner["elements"]))
    if name == "described" and isinstance(inner, dict) and {"descriptor", "value"} <= inner.keys():
        return Described(value_from_json(inner["descriptor"]), value_from_json(inner["value"]))
    raise ValueError(f"unknown type {name!r}, or its value is not what the type takes")


def _map_from_json(pairs: list[Any]) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for pair in pairs:
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError("map: each entry is a [key, value] pair")
        out[value_from_json(pair[0])] = value_from_json(pair[1])
    return out


#: How a ulong key of an annotations map or a footer (reserved by AMQP, kept if a message
#: has one) is written: this prefix, then the number. Symbols are ASCII: no symbol key
#: looks like it.
ULONG_KEY = "\u00abulong\u00bb"


def _typed_map(values: dict[Any, Any]) -> dict[str, Any]:
    return {(key if isinstance(key, str) else f"{ULONG_KEY}{int(key)}"): value_to_json(value)
            for key, value in values.items()}


def _typed_map_from(values: Any, what: str) -> dict[str, Any]:
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValueError(f"{what} is not an object")
    out: dict[Any, Any] = {}
    for key, value in values.items():
        try:
            name: Any = (ulong(int(key[len(ULONG_KEY):])) if key.startswith(ULONG_KEY)
                         else key)
            out[name] = value_from_json(value)
        except ValueError as exc:
            raise ValueError(f"{what}[{key!r}]: {exc}") from None
    return out
