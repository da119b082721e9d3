"""The `kuberay` command line. Each subcommand lives with the layer it serves and is only wired here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

import kuberay
from kuberay import local
from kuberay.api import crd, manifest
from kuberay.api.features import FeatureGateError, FeatureGates

app = typer.Typer(no_args_is_help=True, add_completion=False, help="KubeRay in Python.")
local_app = typer.Typer(no_args_is_help=True, help="KubeRay on this machine, on localkube.")
app.add_typer(local_app, name="local")


@local_app.command("up")
def local_up(
    data_dir: Annotated[Path, typer.Option(help="localkube's state, the kubeconfig and the logs.")] = Path(
        ".localkube"
    ),
    port: Annotated[int, typer.Option(help="localkube's HTTPS port (0 picks a free one).")] = 6443,
    node_mode: Annotated[
        str, typer.Option(help="simulate: pods are simulated; process: pods run as local processes.")
    ] = "simulate",
    feature_gates: Annotated[str, typer.Option(help="Passed to the operator, e.g. RayCronJob=true.")] = "",
) -> None:
    """Start localkube and the operator; print how to use them; stop both on Ctrl-C."""
    if node_mode not in ("simulate", "process"):
        typer.echo(f"error: --node-mode must be simulate or process, not {node_mode!r}", err=True)
        raise typer.Exit(2)
    options = local.LocalOptions(
        data_dir=data_dir, port=port, node_mode=node_mode, feature_gates=feature_gates
    )
    raise typer.Exit(local.up(options))


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


@app.command()
def validate(
    files: Annotated[
        list[Path],
        typer.Option("-f", "--filename", help="A manifest file (YAML, several documents); '-' reads stdin."),
    ],
    feature_gates: Annotated[
        str, typer.Option(help="Gates as the operator takes them, e.g. RayClusterMTLS=true.")
    ] = "",
) -> None:
    """Check every ray.io object in the files offline: the CRD schema, then the operator's validation.

    Prints `<Kind>/<name>: ok` or one line per error; exits 1 when an object is invalid, 2 when a file
    cannot be read or is not YAML. Other kinds of objects are skipped.
    """
    try:
        gates = FeatureGates.parse(feature_gates)
        objects = [obj for path in files for obj in _ray_objects(path)]
    except (manifest.ManifestError, FeatureGateError) as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    invalid = False
    for obj in objects:
        name = manifest.display_name(obj)
        errors = manifest.check_object(obj, gates)
        invalid = invalid or bool(errors)
        for line in [str(error) for error in errors] or ["ok"]:
            typer.echo(f"{name}: {line}")
    if invalid:
        raise typer.Exit(1)


def _ray_objects(path: Path) -> list[dict[str, object]]:
    """The ray.io objects of one file; every failure names the file."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        return manifest.ray_objects(text)
    except OSError as error:
        raise manifest.ManifestError(f"{path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, manifest.ManifestError) as error:
        raise manifest.ManifestError(f"{path}: {error}") from None


def main() -> None:
    app()
