"""Every option of the `kuberay` command says what it does, and choices are listed in --help."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import typer.main
from typer.testing import CliRunner

from kuberay.cli import app


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, command
    for name, sub in (getattr(command, "commands", None) or {}).items():
        yield from _commands(sub, f"{path} {name}")


def test_every_option_has_help() -> None:
    missing = [
        f"{path} --{param.name}"
        for path, command in _commands(typer.main.get_command(app), "kuberay")
        for param in command.params
        if not getattr(param, "help", None)
    ]
    assert missing == []


def test_choices_are_listed() -> None:
    result = CliRunner().invoke(app, ["local", "up", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "simulate|process" in result.output and "console|json" in result.output
    status = CliRunner().invoke(app, ["local", "status", "--help"], env={"COLUMNS": "200"})
    assert "text|json" in status.output


def test_start_up_loads_no_layer() -> None:
    # Shell completion runs the program on every Tab: importing it must not load the models, the clients
    # or importlib.metadata (kuberay.__version__ is looked up when `kuberay version` asks for it).
    code = "import sys, kuberay.cli; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], check=True, capture_output=True, text=True
        ).stdout.split()
    )
    heavy = {
        "importlib.metadata",
        "pydantic",
        "lightkube",
        "httpx",
        "httpx2",
        "prometheus_client",
        "kuberay.api",
    }
    assert loaded & heavy == set()
