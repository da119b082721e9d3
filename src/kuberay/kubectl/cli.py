"""The `kubectl-ray` command line (click): upstream's command tree, flags, defaults and aliases, wired to the
modules that do the work. Command bodies only hand their arguments on; what a command checks, computes and
prints lives in the module named after it (`create`, `listing`, `log`, `session`, ...). An option that
several commands share (the head's and workers' resources, `--ray-version`, `--image`) is declared once in
`SHARED_OPTIONS` and taken by name with `shared_options(...)`.

kubectl's config flags (`--kubeconfig`, `--context`, `-n/--namespace`) are accepted before or after the
subcommand, as cobra's persistent flags are; the last one given wins. A `PluginError` is printed as
`Error: <message>` on stderr with exit code 1; usage errors exit 2 with click's usage text.
Shell completion: kubectl (1.26+) completes `kubectl ray ...` by running `kubectl_complete-ray ARGS... WORD`
and reading cobra's protocol (one candidate a line, then `:<directive>`); `complete_main` answers it with
click's completion of the same command tree, the names of RayClusters, RayJobs and RayServices included. For `kubectl-ray` called directly,
`_KUBECTL_RAY_COMPLETE=bash_source kubectl-ray` prints click's own script.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click
from click.shell_completion import ShellComplete

from kuberay.kubectl import create as create_ops
from kuberay.kubectl import delete as delete_ops
from kuberay.kubectl import generation, job, kube, listing, session
from kuberay.kubectl import get as get_ops
from kuberay.kubectl import history as history_ops
from kuberay.kubectl import log as log_ops
from kuberay.kubectl import scale as scale_ops
from kuberay.kubectl import version as version_ops
from kuberay.kubectl.kube import KubeFlags, PluginError
from kuberay.rayresources import RAYCLUSTER
from kuberay.runtime.resources import InvalidName, Resource
from kubesemantics import goparse

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


def _flags(ctx: click.Context | None = None) -> KubeFlags:
    """The config flags of this invocation, kept on the root context (given one during completion, where
    no context is current)."""
    root = (ctx or click.get_current_context()).find_root()
    if not isinstance(root.obj, KubeFlags):
        root.obj = KubeFlags()
    return root.obj


def _remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is not None and param.name is not None:
        setattr(_flags(ctx), param.name, value)


def kube_options(f: F) -> F:
    """kubectl's config flags on a command; they are not passed to it but kept for `run`."""
    for decl, help_text in (
        (("--kubeconfig",), "Path to the kubeconfig file to use for CLI requests."),
        (("--context",), "The name of the kubeconfig context to use."),
        (("-n", "--namespace"), "If present, the namespace scope for this CLI request."),
    ):
        f = click.option(*decl, expose_value=False, callback=_remember, is_eager=True, help=help_text)(f)
    return f


def run(work: Callable[[kube.Kube], Awaitable[T]], flags: KubeFlags | None = None) -> T:
    async def main() -> T:
        async with kube.connect(flags or _flags()) as k:
            return await work(k)

    return asyncio.run(main())


def _names(resource: Resource) -> Callable[[click.Context, click.Parameter, str], list[str]]:
    """Completion of the names of `resource` in the namespace; nothing when the cluster cannot be asked."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
        async def names(k: kube.Kube) -> list[str]:
            found = await k.client.list(resource, k.namespace)
            return [
                o["metadata"]["name"] for o in found.items if o["metadata"]["name"].startswith(incomplete)
            ]

        try:
            return run(names, _flags(ctx))
        except (
            Exception
        ):  # completion must never fail the shell; an unreachable cluster simply offers nothing
            return []

    return complete


_cluster_names = _names(RAYCLUSTER)


def _target_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """`NAME`, `TYPE/NAME` or `TYPE NAME`: after a type word, names of that kind; else RayCluster names."""
    before: Sequence[str] = ctx.params.get(param.name or "") or ()
    kind = session.TYPE_WORDS.get(before[-1].lower()) if len(before) == 1 else None
    if len(before) > 1 or (before and kind is None):
        return []
    return _names(delete_ops.KINDS[kind or "raycluster"])(ctx, param, incomplete)


def _key_values(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> dict[str, str]:
    """pflag's StringToString: `k=v,k2=v2`, the flag repeatable."""
    result: dict[str, str] = {}
    for item in value:
        for pair in item.split(","):
            if not pair:
                continue
            key, sep, val = pair.partition("=")
            if not sep:
                raise click.BadParameter(f"{pair} must be formatted as key=value")
            result[key] = val
    return result


def key_value_option(name: str, help_text: str) -> Callable[[F], F]:
    return click.option(name, multiple=True, callback=_key_values, help=help_text)


# kubectl's config flags that take the next argument as their value.
_VALUED_FLAGS = frozenset(("--kubeconfig", "--context", "-n", "--namespace"))


def _words(args: Sequence[str]) -> list[str]:
    """The arguments that are not flags, as cobra leaves them to a command once it has parsed its flags."""
    words: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUED_FLAGS:
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
    return words


class AliasGroup(click.Group):
    """A group whose commands also answer to upstream's aliases (`list`, `logs`, `clusters`, ...), given per
    group, and which prints its help when run without a subcommand. With `says_unknown` (upstream's `get`,
    `create`, `scale`), words that name no subcommand are not a usage error: the group prints
    `unknown command(s) "WORDS"` and its help, and succeeds, as cobra runs upstream's group on them."""

    def __init__(
        self, *args: Any, aliases: dict[str, str] | None = None, says_unknown: bool = False, **kwargs: Any
    ) -> None:
        self.aliases = aliases or {}
        self.says_unknown = says_unknown
        # Without a subcommand a group prints its help and succeeds, as cobra's do.
        kwargs["invoke_without_command"] = True
        super().__init__(*args, **kwargs)
        callback = self.callback

        def help_or_callback(*cb_args: Any, **cb_kwargs: Any) -> Any:
            ctx = click.get_current_context()
            if ctx.invoked_subcommand is None:
                click.echo(ctx.get_help())
                return None
            return callback(*cb_args, **cb_kwargs) if callback else None

        self.callback = help_or_callback

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, self.aliases.get(cmd_name, cmd_name))

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:  # fmt: skip
        if (
            self.says_unknown
            and not ctx.resilient_parsing  # completion keeps click's own lookup
            and not args[0].startswith("-")
            and self.get_command(ctx, args[0]) is None
        ):
            click.echo(f"unknown command(s) {goparse.quote(' '.join(_words(args)))}")
            click.echo(ctx.get_help())
            ctx.exit(0)
        name, command, rest = super().resolve_command(ctx, args)
        return (command.name if command else name), command, rest


def _aliases(**spellings: Sequence[str]) -> dict[str, str]:
    return {alias: command for command, aliases in spellings.items() for alias in aliases}


def _quantity(name: str, default: str, help_text: str) -> Callable[[F], F]:
    return click.option(name, default=default, show_default=bool(default), help=help_text)


# Options several commands take, declared once; `shared_options` applies them by name, in the order given.
SHARED_OPTIONS: dict[str, Callable[[F], F]] = {
    "ray-version": click.option("--ray-version", default=generation.RAY_VERSION, show_default=True, help="Ray version to use"),
    "image": click.option("--image", default=generation.RAY_IMAGE, show_default=True, help="container image to use"),
    "head-cpu": _quantity("--head-cpu", generation.DEFAULT_HEAD_CPU, "number of CPUs in the Ray head"),
    "head-memory": _quantity("--head-memory", generation.DEFAULT_HEAD_MEMORY, "amount of memory in the Ray head"),
    "head-gpu": _quantity("--head-gpu", "0", "number of GPUs in the Ray head"),
    "head-ephemeral-storage": _quantity("--head-ephemeral-storage", "", "amount of ephemeral storage in the Ray head"),
    "head-ray-start-params": key_value_option("--head-ray-start-params", "arguments to the Ray head's 'ray start'"),
    "head-node-selectors": key_value_option("--head-node-selectors", "node selectors of the head pod"),
    "worker-replicas": click.option("--worker-replicas", default=1, show_default=True, help="desired worker group replicas"),
    "num-of-hosts": click.option("--num-of-hosts", default=1, show_default=True, help="number of hosts per worker group replica"),
    "worker-cpu": _quantity("--worker-cpu", generation.DEFAULT_WORKER_CPU, "number of CPUs in each worker replica"),
    "worker-memory": _quantity("--worker-memory", generation.DEFAULT_WORKER_MEMORY, "amount of memory in each worker replica"),
    "worker-gpu": _quantity("--worker-gpu", "0", "number of GPUs in each worker replica"),
    "worker-tpu": _quantity("--worker-tpu", "0", "number of TPUs in each worker replica"),
    "worker-ephemeral-storage": _quantity("--worker-ephemeral-storage", "", "amount of ephemeral storage in each worker replica"),
    "worker-ray-start-params": key_value_option("--worker-ray-start-params", "arguments to the Ray workers' 'ray start'"),
    "worker-node-selectors": key_value_option("--worker-node-selectors", "node selectors of the worker pods"),
    "all-namespaces": click.option("-A", "--all-namespaces", is_flag=True, help="If present, list across all namespaces."),
    "ray-cluster": click.option("-c", "--ray-cluster", default=None, help="Ray cluster", shell_complete=_cluster_names),
    "output": click.option("-o", "--output", type=click.Choice(listing.OUTPUT_FORMATS), default=None, help="Output format."),
}  # fmt: skip


def shared_options(*names: str) -> Callable[[F], F]:
    def apply(f: F) -> F:
        for name in reversed(names):
            f = SHARED_OPTIONS[name](f)
        return f

    return apply


def _target(args: Sequence[str]) -> tuple[str, str]:
    """(kind, name) of `NAME`, `TYPE/NAME` or `TYPE NAME` (`log`'s and `session`'s)."""
    try:
        return session.parse_target(session.joined(args))
    except kube.TargetError as e:
        raise click.UsageError(str(e)) from e


@click.group(cls=AliasGroup, aliases=_aliases(get=["list"], log=["logs"]),
             context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
@kube_options
def ray() -> None:
    """Manage Ray resources on Kubernetes."""


@ray.command()
@kube_options
def version() -> None:
    """Output the version of the Ray kubectl plugin and KubeRay operator."""
    click.echo(run(version_ops.version), nl=False)


@ray.group(cls=AliasGroup, says_unknown=True, aliases=_aliases(
    cluster=["clusters", "raycluster", "rayclusters"], job=["jobs", "rayjob", "rayjobs"],
    service=["services", "rayservice", "rayservices"], node=["nodes"], workergroup=["workergroups"],
))  # fmt: skip
@kube_options
def get() -> None:
    """Display one or many Ray resources."""


def _get_command(name: str, shown: listing.Listing, help_text: str) -> None:
    """`get cluster|job|service [NAME]`: one `listing.Listing` each."""

    @get.command(name, help=help_text)
    @click.argument("name", required=False, shell_complete=_names(shown.resource))
    @shared_options("all-namespaces", "output")
    @kube_options
    def command(name: str | None, all_namespaces: bool, output: str | None) -> None:
        click.echo(run(lambda k: listing.show(k, shown, name, all_namespaces, output)), nl=False)


_get_command("cluster", listing.CLUSTERS, "Get cluster information.")
_get_command("job", listing.JOBS, "Get RayJobs: job and deployment status, cluster, start and end time.")
_get_command("service", listing.SERVICES, "Get RayServices: service status, active and pending cluster, ready applications.")  # fmt: skip


@get.command("node")
@click.argument("node", required=False)
@shared_options("ray-cluster", "all-namespaces")
@kube_options
def get_node(node: str | None, ray_cluster: str | None, all_namespaces: bool) -> None:
    """Get Ray nodes."""
    click.echo(run(lambda k: get_ops.nodes(k, node, ray_cluster, all_namespaces)), nl=False)


@get.command("workergroup")
@click.argument("group", required=False)
@shared_options("ray-cluster", "all-namespaces")
@kube_options
def get_workergroup(group: str | None, ray_cluster: str | None, all_namespaces: bool) -> None:
    """Get Ray worker groups."""
    click.echo(run(lambda k: get_ops.workergroups(k, group, ray_cluster, all_namespaces)), nl=False)


@get.command("token")
@click.argument("cluster", shell_complete=_cluster_names)
@kube_options
def get_token(cluster: str) -> None:
    """Get the auth token from the ray cluster."""
    click.echo(run(lambda k: get_ops.token(k, cluster)), nl=False)


@ray.group(cls=AliasGroup, says_unknown=True)
@kube_options
def create() -> None:
    """Create Ray resources."""


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        return goparse.parse_duration(value) / 1e9
    except ValueError as e:
        raise click.BadParameter(str(e)) from e


def _given(ctx: click.Context) -> list[str]:
    """The options of this command set on the command line (kubectl's config flags aside)."""
    return [
        p.name
        for p in ctx.command.params
        if isinstance(p, click.Option) and p.name and p.expose_value
        and ctx.get_parameter_source(p.name) != click.core.ParameterSource.DEFAULT
    ]  # fmt: skip


@create.command("cluster")
@click.argument("name", required=False)
@key_value_option("--labels", "K8s labels (e.g. --labels app=ray,env=dev)")
@key_value_option("--annotations", "K8s annotations (e.g. --annotations ttl-hours=24,owner=chthulu)")
@shared_options("ray-version", "image", "head-cpu", "head-memory", "head-gpu", "head-ephemeral-storage",
                "head-ray-start-params", "head-node-selectors", "worker-replicas", "worker-cpu", "worker-memory",
                "worker-gpu", "worker-tpu", "worker-ephemeral-storage", "worker-ray-start-params",
                "worker-node-selectors", "num-of-hosts")  # fmt: skip
@click.option("--autoscaler", type=click.Choice(["v1", "v2"], case_sensitive=False), default=None, help="autoscaler to use")  # fmt: skip
@click.option("--file", "file", type=click.Path(dir_okay=False), default=None,
              help="path to a YAML file containing Ray cluster configuration")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="print the generated YAML instead of creating the cluster")
@click.option("--wait", is_flag=True, help="wait for the cluster to be provisioned before returning")
@click.option("--timeout", default="5m", callback=_duration, show_default=True, help="the timeout for --wait")
@kube_options
def create_cluster(name: str | None, **flags: Any) -> None:
    """Create a Ray cluster with the given name and options."""
    given = _given(click.get_current_context())
    kube_flags = _flags()
    if flags["file"]:
        create_ops.check_with_file(given)
        config = create_ops.config_file(Path(flags["file"]))
        name, namespace = create_ops.file_target(config, name, kube_flags.namespace)
    elif not name:
        raise click.UsageError("cluster [CLUSTERNAME]")
    else:
        config = create_ops.config_from_flags(flags, given)
        namespace = kube_flags.namespace or ""
    if flags["dry_run"]:
        click.echo(create_ops.dry_run(config, name, namespace or kube.namespace(kube_flags)), nl=False)
        return
    run(lambda k: create_ops.cluster(k, config, name, namespace or k.namespace, wait=flags["wait"], timeout=flags["timeout"]))  # fmt: skip


@create.command("workergroup")
@click.argument("name")
@click.option("-c", "--ray-cluster", required=True, help="Ray cluster to add the worker group to",
              shell_complete=_cluster_names)  # fmt: skip
@shared_options("ray-version", "image", "worker-replicas", "num-of-hosts")
@click.option("--worker-min-replicas", default=1, show_default=True, help="minimum worker group replicas")
@click.option("--worker-max-replicas", default=10, show_default=True, help="maximum worker group replicas")
@shared_options("worker-cpu", "worker-gpu", "worker-tpu", "worker-memory", "worker-ray-start-params",
                "worker-node-selectors")  # fmt: skip
@kube_options
def create_workergroup(name: str, ray_cluster: str, **flags: Any) -> None:
    """Create a worker group in an existing Ray cluster."""
    group = create_ops.worker_group_from_flags(name, flags)
    run(lambda k: create_ops.workergroup(k, ray_cluster, group))


def _read_answer(prompt: str) -> str:
    click.echo(prompt, nl=False)
    return sys.stdin.readline()


@ray.command()
@click.argument("targets", nargs=-1, required=True, shell_complete=_cluster_names)
@click.option("-y", "--yes", is_flag=True, help="Skip the confirmation prompt.")
@kube_options
def delete(targets: tuple[str, ...], yes: bool) -> None:
    """Delete Ray resources: RAYCLUSTER or TYPE/NAME (raycluster, rayjob, rayservice)."""
    try:
        parsed = delete_ops.parse_targets(list(targets))
    except kube.TargetError as e:
        raise click.UsageError(str(e)) from e
    if not yes and not delete_ops.confirm(parsed, _read_answer):
        return
    run(lambda k: delete_ops.delete(k, parsed))


@ray.group(cls=AliasGroup, says_unknown=True)
@kube_options
def scale() -> None:
    """Scale a Ray resource."""


@scale.command("cluster")
@click.argument("cluster", shell_complete=_cluster_names)
@click.option("-w", "--worker-group", default="", help="worker group to scale")
@click.option("-r", "--replicas", default=scale_ops.UNSET, help="desired number of replicas")
@click.option("--min-replicas", default=scale_ops.UNSET, help="minimum number of replicas")
@click.option("--max-replicas", default=scale_ops.UNSET, help="maximum number of replicas")
@kube_options
def scale_cluster(
    cluster: str, worker_group: str, replicas: int, min_replicas: int, max_replicas: int
) -> None:
    """Scale a worker group of a Ray cluster."""
    scale_ops.validate(worker_group, replicas, min_replicas, max_replicas)
    click.echo(run(lambda k: scale_ops.cluster(k, cluster, worker_group, replicas, min_replicas, max_replicas)), nl=False)  # fmt: skip


@ray.command("session")
@click.argument("target", nargs=-1, required=True, shell_complete=_target_names)
@click.option("-v", "--verbose", is_flag=True, help="verbose output")
@click.option("--history", is_flag=True, help="the History Server's dashboard of its stored session")
@history_ops.server_options
@kube_options
def session_command(target: tuple[str, ...], verbose: bool, history: bool, **server: str | None) -> None:
    """Forward local ports to the Ray resources (RAYCLUSTER, TYPE/NAME or TYPE NAME)."""
    kind, name = _target(target)
    if history:
        stored = history_ops.server_from(
            server["history_server"], server["history_namespace"], server["history_token"]
        )
        with contextlib.suppress(KeyboardInterrupt):
            run(lambda k: history_ops.open_session(k, _flags(), stored, (kind, name)))
        return
    service, args = run(lambda k: session.forward_target(k, _flags(), kind, name))
    click.echo(f"Forwarding ports to service {service}")
    for label, port in session.PORTS[kind]:
        click.echo(f"{label}: http://localhost:{port}")
    click.echo()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a session ends
        session.forward(args, verbose)


@ray.group("job", cls=AliasGroup)
@kube_options
def job_group() -> None:
    """Submit Ray jobs."""


@job_group.command("submit")
@click.argument("entrypoint", nargs=-1)
@click.option("-f", "--filename", default=None, help="path to a RayJob YAML in InteractiveMode")
@click.option("--address", default=None, help="the Ray dashboard's address (no port-forward when given)")
@click.option("--submission-id", default=None, help="the Ray job's submission id (generated when absent)")
@click.option("--runtime-env", default=None, help="path to a runtime env YAML file")
@click.option("--working-dir", default=None, help="local directory uploaded as the job's working directory")
@click.option("--headers", default=None, help="HTTP headers for the dashboard, as JSON")
@click.option("--runtime-env-json", default=None, help="the runtime env as JSON")
@click.option("--verify", default=None, help="TLS verification of the dashboard: true, false or a CA bundle")
@click.option("--entrypoint-resources", default=None, help="custom resources of the entrypoint, as JSON")
@click.option("--metadata-json", default=None, help="the job's metadata, as JSON")
@click.option("--log-style", default=None, help="accepted for compatibility with `ray job submit`")
@click.option("--log-color", default=None, help="accepted for compatibility with `ray job submit`")
@click.option("--entrypoint-num-cpus", default=0.0, help="CPUs reserved for the entrypoint")
@click.option("--entrypoint-num-gpus", default=0.0, help="GPUs reserved for the entrypoint")
@click.option("--entrypoint-memory", default=0, help="memory (bytes) reserved for the entrypoint")
@click.option("--no-wait", is_flag=True, help="do not wait for the job to finish")
@click.option("--name", default="", help="the RayJob's name (without -f)")
@shared_options("ray-version", "image", "head-cpu", "head-memory", "head-gpu", "worker-replicas", "worker-cpu",
                "worker-memory", "worker-gpu")  # fmt: skip
@click.option("--dry-run", is_flag=True, help="print the generated RayJob instead of creating it")
@click.option("-v", "--verbose", is_flag=True, help="verbose output")
@shared_options("head-node-selectors", "worker-node-selectors")
@click.option("--ttl-seconds-after-finished", type=int, default=None,
              help="delete the cluster this long after the job ends")  # fmt: skip
@kube_options
def job_submit(
    entrypoint: tuple[str, ...], log_style: str | None, log_color: str | None, **flags: Any
) -> None:
    """Submit a Ray job to a RayJob's cluster: kubectl ray job submit [OPTIONS] -- ENTRYPOINT."""
    options = job.Submit(entrypoint=list(entrypoint), **flags)
    job.validate(options)
    run(lambda k: job.submit(k, _flags(), options))


@ray.command("log")
@click.argument("target", nargs=-1, required=True, shell_complete=_target_names)
@click.option("--out-dir", default=None, help="directory to save the logs to")
@click.option("--node-type", type=click.Choice(log_ops.NODE_TYPES, case_sensitive=False), default="all",
              show_default=True, help="type of Ray node from which to download logs")  # fmt: skip
@click.option("--link", default=None, help="print a link to a cloud console to view logs, supports: 'gke'")
@kube_options
def log_command(target: tuple[str, ...], out_dir: str | None, node_type: str, link: str | None) -> None:
    """Download the logs of a Ray resource (RAYCLUSTER, TYPE/NAME or TYPE NAME); a RayJob's include its
    driver's output and its submitter's log."""
    try:
        kind, name = log_ops.parse_target(session.joined(target))
    except kube.TargetError as e:
        raise click.UsageError(str(e)) from e
    directory, created = log_ops.prepare(node_type.lower(), link, out_dir, name)
    with log_ops.removed_on_failure(directory, created):
        run(lambda k: log_ops.logs(k, _flags(), kind, name, directory, node_type.lower()))


SHELL_COMP_DIRECTIVE_NO_FILE_COMP = 4  # cobra's ShellCompDirectiveNoFileComp


history_ops.register(ray, run, _flags, kube_options, session.parse_target)


def complete_main() -> None:
    """`kubectl_complete-ray ARGS... WORD`: candidates for WORD after ARGS, in cobra's protocol."""
    *args, incomplete = sys.argv[1:] or [""]
    completer = ShellComplete(ray, {}, "kubectl ray", "_KUBECTL_RAY_COMPLETE")
    for item in completer.get_completions(args, incomplete):
        click.echo(item.value)
    click.echo(f":{SHELL_COMP_DIRECTIVE_NO_FILE_COMP}")


def main() -> None:
    try:
        ray.main(prog_name="kubectl ray", standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(1)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (PluginError, InvalidName) as e:  # a name no URL can carry: refused as client-go refuses it
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
