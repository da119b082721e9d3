"""The `kuberay` command line. Each subcommand lives with the layer it serves and is only wired here.

Each command imports its layer when it runs: `kuberay local status` and shell completion (which runs
this program on every Tab) then start in a fraction of the time the models and the clients take to load.
"""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import orjson
import typer

import kuberay
from kuberay.local import instance

app = typer.Typer(no_args_is_help=True, help="KubeRay, the Kubernetes operator for Ray, in Python.")
local_app = typer.Typer(
    no_args_is_help=True,
    help="KubeRay on this machine: localkube and the operator, one instance per data directory.",
)
app.add_typer(local_app, name="local")

DEFAULT_DATA_DIR = Path(".localkube")
STOP_TIMEOUT = 90.0  # localkube gives each pod's processes up to 10 s, then the launcher waits for it

DataDir = Annotated[
    Path,
    typer.Option(help="The instance's directory: localkube's state, the kubeconfig, the logs, the lock."),
]


class NodeMode(StrEnum):
    simulate = "simulate"
    process = "process"


class LogFormat(StrEnum):
    console = "console"
    json = "json"


class OutputFormat(StrEnum):
    text = "text"
    json = "json"


@local_app.command("up", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def local_up(
    context: typer.Context,
    data_dir: DataDir = DEFAULT_DATA_DIR,
    port: Annotated[int, typer.Option(help="localkube's HTTPS port; 0 picks a free one.")] = 6443,
    node_mode: Annotated[
        NodeMode,
        typer.Option(help="simulate: pods are simulated; process: pods run as local processes (real Ray)."),
    ] = NodeMode.simulate,
    feature_gates: Annotated[
        str, typer.Option(help="The operator's feature gates, e.g. RayCronJob=true.")
    ] = "",
    schedulers: Annotated[
        str,
        typer.Option(
            help="The schedulerNames localkube schedules, e.g. default-scheduler,volcano (gang-schedules "
            "Volcano's and scheduler-plugins-scheduler's PodGroups); other schedulers' pods stay Pending."
        ),
    ] = "default-scheduler",
    log_format: Annotated[
        LogFormat, typer.Option(help="The launcher's and the operator's log lines: console or JSON.")
    ] = LogFormat.console,
    monitoring: Annotated[
        bool,
        typer.Option(
            help="Also start Prometheus (Debian's `prometheus` on the PATH) scraping the operator (with "
            "--enable-metrics) and every Ray pod; its URL is printed and in `kuberay local status`."
        ),
    ] = False,
    history: Annotated[
        bool,
        typer.Option(
            help="Also start the History Server over DATA_DIR/history (collectors write there with "
            "STORAGE_BACKEND=local and STORAGE_LOCAL_DIR=DATA_DIR/history); its URL is printed and in "
            "`kuberay local status`.",
        ),
    ] = False,
    operator: Annotated[
        bool,
        typer.Option(
            "--operator/--no-operator",
            help="--no-operator: localkube alone (with the CRDs), to install the operator into it "
            "(helm install, kubectl apply -k deploy/).",
        ),
    ] = True,
) -> None:
    """Start localkube and the operator; print how to use them once both answer; stop both on Ctrl-C.

    Arguments after `--` go to kuberay-operator and override the launcher's, e.g.
    `kuberay local up -- --batch-scheduler volcano`.

    The operator's metrics and health-probe ports are free ones; `kuberay local status` shows them.
    """
    from kuberay.local import launcher

    options = launcher.LocalOptions(
        data_dir=data_dir,
        port=port,
        node_mode=node_mode.value,
        feature_gates=feature_gates,
        schedulers=schedulers,
        log_format=log_format.value,
        monitoring=monitoring,
        history=history,
        operator=operator,
        operator_args=tuple(context.args),
    )
    raise typer.Exit(launcher.up(options))


@local_app.command("status")
def local_status(
    data_dir: DataDir = DEFAULT_DATA_DIR,
    output: Annotated[
        OutputFormat, typer.Option(help="text for people, json for scripts.")
    ] = OutputFormat.text,
) -> None:
    """Show what runs on the data directory: phase, processes, ports, kubeconfig, logs.

    Exits 0 when an instance runs there, 3 when none does.
    """
    state = instance.read_state(data_dir.resolve())
    if state is None:
        pid = instance.holder(data_dir.resolve())
        if output is OutputFormat.json:
            typer.echo(orjson.dumps({"phase": "starting" if pid is not None else "stopped"}).decode())
        else:
            typer.echo(f"kuberay local: {'starting' if pid is not None else 'not running'} on {data_dir}")
        raise typer.Exit(0 if pid is not None else 3)
    if output is OutputFormat.json:
        typer.echo(state.to_json().decode())
        return
    children = ", ".join(f"{name} (pid {pid})" for name, pid in state.children.items())
    operator = (
        f"operator metrics: {state.operator_metrics}; health probe: {state.operator_health_probe}"
        if state.operator_metrics
        else "operator: none started here (--no-operator)"
    )
    typer.echo(
        f"kuberay local: {state.phase} on {state.data_dir} (launcher pid {state.pid}, {state.node_mode} mode)\n"
        f"  processes: {children or 'none yet'}\n"
        f"  API server: {state.api_server or 'not yet'}\n"
        f"  {operator}\n"
        + (f"  Prometheus: {state.prometheus}\n" if state.prometheus else "")
        + (
            f"  History Server: {state.history_server} (storage: {state.history_dir})\n"
            if state.history_server
            else ""
        )
        + f"  kubeconfig: {state.kubeconfig}\n"
        f"  logs: {', '.join(state.logs.values())}"
    )


@local_app.command("down")
def local_down(data_dir: DataDir = DEFAULT_DATA_DIR) -> None:
    """Stop the instance running on the data directory (from any shell); waits until it has stopped.

    Succeeds, saying so, when nothing runs there.
    """
    try:
        pid = instance.stop(data_dir.resolve(), STOP_TIMEOUT)
    except instance.InstanceError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"kuberay local: {'stopped process ' + str(pid) if pid else 'nothing runs'} on {data_dir}")


@app.command()
def version() -> None:
    """Print kuberay's version (the installed distribution's)."""
    typer.echo(kuberay.__version__)


@app.command()
def crds(
    output_dir: Annotated[
        Path | None,
        typer.Option(help="Write one file per CRD here (as deploy/crds/ holds them) instead of printing."),
    ] = None,
) -> None:
    """Print the four ray.io CustomResourceDefinitions as one multi-document YAML stream."""
    from kuberay.api import crd

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
    from kuberay.api import manifest
    from kuberay.api.features import FeatureGateError, FeatureGates

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
            typer.echo(_printable(f"{name}: {line}"))
    if invalid:
        raise typer.Exit(1)


def _printable(text: str) -> str:
    """`text` with its non-printable characters escaped (``\\x1b``, ``\\u2028``): a hostile name or value
    must not forge output lines or terminal escapes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


def _ray_objects(path: Path) -> list[dict[str, object]]:
    """The ray.io objects of one file; every failure names the file."""
    from kuberay.api import manifest

    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        return manifest.ray_objects(text)
    except OSError as error:
        raise manifest.ManifestError(f"{path}: {error.strerror or error}") from None
    except (UnicodeDecodeError, manifest.ManifestError) as error:
        raise manifest.ManifestError(f"{path}: {error}") from None


def main() -> None:
    app(prog_name="kuberay")


if __name__ == "__main__":
    main()
