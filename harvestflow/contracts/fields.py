"""Type checks for the contract models: each failure names the file and the field."""

from __future__ import annotations

from typing import Any

from harvestflow.contracts import ContractError


def _what(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def bad(where: str, field: str, expected: str, value: Any) -> ContractError:
    return ContractError(f"{where}: field {field!r}: expected {expected}, got {_what(value)}")


def as_int(where: str, field: str, value: Any) -> int:
    """An integer (a JSON number without a fraction; true/false are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(where, field, "an integer", value)
    if isinstance(value, float):
        if not value.is_integer():
            raise bad(where, field, "an integer", value)
        return int(value)
    return value


def as_opt_int(where: str, field: str, value: Any) -> int | None:
    return None if value is None else as_int(where, field, value)


def as_str(where: str, field: str, value: Any) -> str:
    if not isinstance(value, str):
        raise bad(where, field, "a string", value)
    return value


def as_opt_str(where: str, field: str, value: Any) -> str | None:
    return None if value is None else as_str(where, field, value)


def as_bool(where: str, field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise bad(where, field, "true or false", value)
    return value


def as_str_list(where: str, field: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise bad(where, field, "a list of strings", value)
    return list(value)


def as_object(where: str, field: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise bad(where, field, "an object", value)
    return value


def as_version(where: str, data: dict[str, Any], current: int) -> int:
    """The file's ``version`` (0 when absent: written before versions); newer is refused."""
    version = as_int(where, "version", data.get("version", 0))
    if version < 0 or version > current:
        raise ContractError(
            f"{where}: field 'version': {version} is not one this reader knows (0 to {current});"
            " upgrade harvestflow where this file is read"
        )
    return version
