"""The selection mapping of config/selection_mapping.toml.

Why a reviewed file: which (budget, frequency, depth) combinations are refused and which domain
configuration and template a record's seeds go into are curatorial decisions that change
without a code release; the file says them in the curators' words.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harvest.errors import HarvestError
from harvestflow.package_data import data_path

MAPPING_FILE = data_path("config", "selection_mapping.toml")
BUDGETS = ("small", "medium", "large")


class MappingError(HarvestError, ValueError):
    """A mapping file that cannot be used (file and reason)."""


@dataclass(frozen=True)
class ConfigChoice:
    """Where a record's seeds go: a named configuration of the record's domain."""

    name: str
    template: str
    max_bytes: int
    max_objects: int
    attributes: dict[str, Any]

    @property
    def attributes_json(self) -> str:
        return json.dumps(self.attributes, sort_keys=True)


@dataclass
class SelectionMapping:
    budgets: dict[str, dict[str, int]]
    depths: dict[str, dict[str, Any]]
    frequencies: dict[str, dict[str, Any]]
    incompatible: list[dict[str, str]]
    collections: dict[str, str]
    ukwa_scope: dict[str, str] = field(default_factory=dict)
    ukwa_depth: dict[str, str] = field(default_factory=dict)

    def normalise_frequency(self, value: str) -> str:
        """The record frequency in the file's words (lower case, ``_`` as ``-``)."""
        key = value.strip().lower().replace("_", "-")
        if key not in self.frequencies:
            raise ValueError(
                f"unknown frequency {value!r}; expected one of {', '.join(self.frequencies)}"
            )
        return key

    def dag_frequency(self, frequency: str) -> str:
        return str(self.frequencies[self.normalise_frequency(frequency)]["dag"])

    def every_months(self, frequency: str) -> int | None:
        value = self.frequencies[self.normalise_frequency(frequency)].get("every_months")
        return int(value) if value else None

    def check(self, budget: str, frequency: str, depth: str) -> str | None:
        """None when the combination is allowed, else the reason it is refused."""
        if budget not in self.budgets:
            return f"unknown budget {budget!r}; expected one of {', '.join(self.budgets)}"
        if depth not in self.depths:
            return f"unknown depth {depth!r}; expected one of {', '.join(self.depths)}"
        try:
            freq = self.normalise_frequency(frequency)
        except ValueError as exc:
            return str(exc)
        dag = self.dag_frequency(freq)
        for rule in self.incompatible:
            if all(
                rule.get(k) in (None, v) for k, v in (("budget", budget), ("depth", depth))
            ) and rule.get("frequency") in (None, freq, dag):
                return str(rule.get("reason") or f"{budget}/{freq}/{depth} is not allowed")
        return None

    def choices(self, budget: str, frequency: str, depth: str) -> dict[str, dict[str, str | None]]:
        """For each field, each of its values and why it is refused with the other two as
        chosen (None: allowed), by :meth:`check`, the save's own check: what the form shows
        as you choose. A field not chosen yet ('') refuses nothing of the others."""
        chosen = {"budget": budget, "frequency": frequency, "depth": depth}
        options = {"budget": list(self.budgets), "frequency": list(self.frequencies),
                   "depth": list(self.depths)}  # fmt: skip
        found: dict[str, dict[str, str | None]] = {}
        for name, values in options.items():
            found[name] = {}
            for value in values:
                trial = {**chosen, name: value}
                unset = [k for k, v in trial.items() if not v]
                if unset:  # judge against every value of the fields not chosen yet
                    found[name][value] = self._first_allowed(trial, unset, options)
                else:
                    found[name][value] = self.check(**trial)
        return found

    def _first_allowed(
        self, trial: dict[str, str], unset: list[str], options: dict[str, list[str]]
    ) -> str | None:
        """None when some values of the ``unset`` fields make ``trial`` allowed, else the
        reason most of them give (the one the chosen values cause, not an unset one's)."""
        combos: list[dict[str, str]] = [trial]
        for name in unset:
            combos = [{**c, name: v} for c in combos for v in options[name]]
        reasons = [self.check(**c) for c in combos]
        if any(r is None for r in reasons):
            return None
        return Counter(reasons).most_common(1)[0][0]

    def config_for(
        self, budget: str, frequency: str, depth: str, *, ignore_robots: bool = False
    ) -> ConfigChoice:
        """The configuration a record's seeds go into."""
        limits = self.budgets[budget]
        spec = self.depths[depth]
        attributes = dict(spec.get("attributes") or {})
        if ignore_robots:
            attributes["obey_robots"] = False
        freq = self.normalise_frequency(frequency)
        name = f"sel-{budget}-{freq}-{depth}" + ("-norobots" if ignore_robots else "")
        return ConfigChoice(
            name=name,
            template=str(spec["template"]),
            max_bytes=int(limits.get("max_bytes", -1)),
            max_objects=int(limits.get("max_objects", -1)),
            attributes=attributes,
        )

    def definition_prefix(self, collection: str) -> str:
        if collection in self.collections:
            return self.collections[collection]
        slug = re.sub(r"[^a-z0-9]+", "-", collection.lower()).strip("-")
        return slug or "selection"


def load_mapping(path: Path = MAPPING_FILE) -> SelectionMapping:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise MappingError(f"{path}: {exc}") from exc
    budgets = data.get("budgets") or {}
    if set(budgets) != set(BUDGETS):
        raise MappingError(f"{path}: [budgets] must define exactly {', '.join(BUDGETS)}")
    depths = data.get("depths") or {}
    for name, spec in depths.items():
        if "template" not in spec:
            raise MappingError(f"{path}: [depths.{name}] has no template")
    frequencies = data.get("frequencies") or {}
    for name, spec in frequencies.items():
        if spec.get("dag") not in ("daily", "weekly", "monthly", "semiannual", "annual"):
            raise MappingError(f"{path}: [frequencies] {name}: unknown dag {spec.get('dag')!r}")
    ukwa = data.get("ukwa") or {}
    return SelectionMapping(
        budgets=budgets,
        depths=depths,
        frequencies={k.lower(): v for k, v in frequencies.items()},
        incompatible=list(data.get("incompatible") or []),
        collections=dict(data.get("collections") or {}),
        ukwa_scope=dict(ukwa.get("scope") or {}),
        ukwa_depth=dict(ukwa.get("depth") or {}),
    )
