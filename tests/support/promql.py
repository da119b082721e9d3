"""PromQL in the repository's monitoring files, for tests: every expression of the Grafana dashboards
(`deploy/grafana`) and of the PrometheusRules (`deploy/prometheus`), parsed by `promql-parser` (the Rust
parser of GreptimeDB's PromQL, a port of Prometheus's own), and the metric names each one reads.

Grafana's variables are replaced by values of their kind before parsing: `$__rate_interval`, `$interval`
and the like in ranges by `5m`, the others (inside label matchers) by `x`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import promql_parser
import yaml

ROOT = Path(__file__).resolve().parents[2]
DASHBOARDS = sorted((ROOT / "deploy" / "grafana").glob("*.json"))
MONITORS = sorted((ROOT / "deploy" / "prometheus").rglob("*.yaml"))
_RANGE_VARIABLE = re.compile(r"\[\$\{?\w+\}?\]")
_VARIABLE = re.compile(r"\$\{?\w+\}?")
_LABEL_VALUES = re.compile(r"^label_values\((.*),\s*\w+\)$", re.S)


def dashboard_expressions(path: Path) -> Iterator[tuple[str, str]]:
    """(where, expression) for every panel target and every query variable of a dashboard."""
    dashboard = json.loads(path.read_text())
    for panel in _panels(dashboard.get("panels") or []):
        for target in panel.get("targets") or []:
            yield f"{path.name}: panel {panel.get('title')!r}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable.get("type") == "query":
            query = variable["query"]["query"] if isinstance(variable["query"], dict) else variable["query"]
            match = _LABEL_VALUES.match(query.strip())
            if match is not None:
                yield f"{path.name}: variable {variable['name']}", match.group(1)


def rule_expressions() -> Iterator[tuple[str, str]]:
    for path in MONITORS:
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == "PrometheusRule":
                for group in document["spec"]["groups"]:
                    for rule in group["rules"]:
                        yield f"{path.name}: {rule.get('record') or rule.get('alert')}", rule["expr"]


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])


def parse(expression: str) -> Any:
    """The expression's syntax tree; raises ValueError naming the problem when it does not parse."""
    text = _VARIABLE.sub("x", _RANGE_VARIABLE.sub("[5m]", expression))
    return promql_parser.parse(text)


def metric_names(node: Any) -> set[str]:
    """The metric names an expression reads (its vector selectors' names)."""
    kind = type(node).__name__
    if kind == "VectorSelector":
        return {node.name} if node.name else set()
    if kind == "MatrixSelector":
        return metric_names(node.vector_selector)
    found: set[str] = set()
    for attribute in ("expr", "lhs", "rhs", "param"):
        child = getattr(node, attribute, None)
        if child is not None:
            found |= metric_names(child)
    for argument in getattr(node, "args", None) or []:
        found |= metric_names(argument)
    return found
