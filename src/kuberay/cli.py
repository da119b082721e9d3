"""The `kuberay` command line. Each subcommand lives with the layer it serves and is only wired here."""

from __future__ import annotations

import typer

import kuberay

app = typer.Typer(no_args_is_help=True, add_completion=False, help="KubeRay in Python.")


@app.command()
def version() -> None:
    """Print kuberay's version."""
    typer.echo(kuberay.__version__)


def main() -> None:
    app()
