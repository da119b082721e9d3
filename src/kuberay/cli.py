"""The `kuberay` command line. Each subcommand lives with the layer it serves and is only wired here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

import kuberay
from kuberay.api import crd

app = typer.Typer(no_args_is_help=True, add_completion=False, help="KubeRay in Python.")


@app.command()
def version() -> None:
    """Print kuberay's version."""
    typer.echo(kuberay.__version__)


@app.command()
def crds(
    output_dir: Annotated[
        Path | None,
        typer.Option(help="Write one file per CRD here (as deploy/crds/ holds them) instead of printing."),
    ] = None,
) -> None:
    """Print the four ray.io CustomResourceDefinitions as one multi-document YAML stream."""
    if output_dir is None:
        typer.echo(crd.render_yaml(), nl=False)
        return
    output_dir.mkdir(parents=True, exist_ok=True)
    for name, content in crd.render_files().items():
        (output_dir / name).write_text(content, encoding="utf-8")


def main() -> None:
    app()
