"""The `kubectl-ray` command line (click): upstream's command tree, flags, defaults and aliases, wired to the
modules that do the work.

kubectl's config flags (`--kubeconfig`, `--context`, `-n/--namespace`) are accepted before or after the
subcommand, as cobra's persistent flags are; the last one given wins. A `PluginError` is printed as
`Error: <message>` on stderr with exit code 1; usage errors exit 2 with click's usage text.
Shell completion: kubectl (1.26+) completes `kubectl ray ...` by running `kubectl_complete-ray ARGS... WORD`
and reading cobra's protocol (one candidate a line, then `:<directive>`); `complete_main` answers it with
click's completion of the same command tree, RayCluster names included. For `kubectl-ray` called directly,
`_KUBECTL_RAY_COMPLETE=bash_source kubectl-ray` prints click's own script.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml
from click.shell_completion import ShellComplete

from kuberay.kubectl import create as create_ops
from kuberay.kubectl import delete as delete_ops
from kuberay.kubectl import generation, job, kube, session
from kuberay.kubectl import get as get_ops
from kuberay.kubectl import log as log_ops
from kuberay.kubectl import scale as scale_ops
from kuberay.kubectl import version as version_ops
from kuberay.kubectl.kube import KubeFlags, PluginError
from kuberay.rayresources import RAYCLUSTER
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


def _cluster_names(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """RayClusters of the namespace for completion; nothing when the cluster cannot be asked."""

    async def names(k: kube.Kube) -> list[str]:
        found = await k.client.list(RAYCLUSTER, k.namespace)
        return [c["metadata"]["name"] for c in found.items if c["metadata"]["name"].startswith(incomplete)]

    try:
        return run(names, _flags(ctx))
    except Exception:  # completion must never fail the shell; an unreachable cluster simply offers nothing
        return []


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


class AliasGroup(click.Group):
    """A group whose commands also answer to upstream's aliases (`clusters`, `nodes`, `list`, `logs`), and
    which prints its help when run without a subcommand."""

    aliases: dict[str, str] = {
        "clusters": "cluster",
        "nodes": "node",
        "workergroups": "workergroup",
        "list": "get",
        "logs": "log",
    }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
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
        name, command, rest = super().resolve_command(ctx, args)
        return (command.name if command else name), command, rest


@click.group(cls=AliasGroup, context_settings={"help_option_names": ["-h", "--help"]})
@kube_options
def ray() -> None:
    """Manage Ray resources on Kubernetes."""


@ray.command()
@kube_options
def version() -> None:
    """Output the version of the Ray kubectl plugin and KubeRay operator."""
    click.echo(run(version_ops.version), nl=False)


@ray.group(cls=AliasGroup)
@kube_options
def get() -> None:
    """Display one or many Ray resources."""


all_namespaces = click.option(
    "-A", "--all-namespaces", is_flag=True, help="If present, list across all namespaces."
)
ray_cluster = click.option(
    "-c", "--ray-cluster", default=None, help="Ray cluster", shell_complete=_cluster_names
)


@get.command("cluster")
@click.argument("name", required=False, shell_complete=_cluster_names)
@all_namespaces
@click.option(
    "-o", "--output", type=click.Choice(get_ops.OUTPUT_FORMATS), default=None, help="Output format."
)
@kube_options
def get_cluster(name: str | None, all_namespaces: bool, output: str | None) -> None:
    """Get cluster information."""
    click.echo(run(lambda k: get_ops.clusters(k, name, all_namespaces, output)), nl=False)


@get.command("node")
@click.argument("node", required=False)
@ray_cluster
@all_namespaces
@kube_options
def get_node(node: str | None, ray_cluster: str | None, all_namespaces: bool) -> None:
    """Get Ray nodes."""
    click.echo(run(lambda k: get_ops.nodes(k, node, ray_cluster, all_namespaces)), nl=False)


@get.command("workergroup")
@click.argument("group", required=False)
@ray_cluster
@all_namespaces
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


@ray.group(cls=AliasGroup)
@kube_options
def create() -> None:
    """Create Ray resources."""


# Flags that may accompany --file: they say how to create, not what.
ALLOWED_WITH_FILE = {"file", "dry_run", "wait", "timeout"}


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    try:
        return goparse.parse_duration(value) / 1e9
    except ValueError as e:
        raise click.BadParameter(str(e)) from e


@create.command("cluster")
@click.argument("name", required=False)
@key_value_option("--labels", "K8s labels (e.g. --labels app=ray,env=dev)")
@key_value_option("--annotations", "K8s annotations (e.g. --annotations ttl-hours=24,owner=chthulu)")
@click.option("--ray-version", default=generation.RAY_VERSION, show_default=True, help="Ray version to use")
@click.option("--image", default=generation.RAY_IMAGE, show_default=True, help="container image to use")
@click.option("--head-cpu", default="2", show_default=True, help="number of CPUs in the Ray head")
@click.option("--head-memory", default="4Gi", show_default=True, help="amount of memory in the Ray head")
@click.option("--head-gpu", default="0", show_default=True, help="number of GPUs in the Ray head")
@click.option("--head-ephemeral-storage", default="", help="amount of ephemeral storage in the Ray head")
@key_value_option("--head-ray-start-params", "arguments to the Ray head's 'ray start'")
@key_value_option("--head-node-selectors", "node selectors of the head pod")
@click.option("--worker-replicas", default=1, show_default=True, help="desired worker group replicas")
@click.option("--worker-cpu", default="2", show_default=True, help="number of CPUs in each worker replica")
@click.option(
    "--worker-memory", default="4Gi", show_default=True, help="amount of memory in each worker replica"
)
@click.option("--worker-gpu", default="0", show_default=True, help="number of GPUs in each worker replica")
@click.option("--worker-tpu", default="0", show_default=True, help="number of TPUs in each worker replica")
@click.option(
    "--worker-ephemeral-storage", default="", help="amount of ephemeral storage in each worker replica"
)
@key_value_option("--worker-ray-start-params", "arguments to the Ray workers' 'ray start'")
@key_value_option("--worker-node-selectors", "node selectors of the worker pods")
@click.option(
    "--num-of-hosts", default=1, show_default=True, help="number of hosts in default worker group per replica"
)
@click.option(
    "--autoscaler",
    type=click.Choice(["v1", "v2"], case_sensitive=False),
    default=None,
    help="autoscaler to use",
)
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False),
    default=None,
    help="path to a YAML file containing Ray cluster configuration",
)
@click.option("--dry-run", is_flag=True, help="print the generated YAML instead of creating the cluster")
@click.option("--wait", is_flag=True, help="wait for the cluster to be provisioned before returning")
@click.option("--timeout", default="5m", callback=_duration, show_default=True, help="the timeout for --wait")
@kube_options
def create_cluster(name: str | None, **flags: Any) -> None:  # fmt: skip
    """Create a Ray cluster with the given name and options."""
    ctx = click.get_current_context()
    kube_flags = _flags()
    if flags["file"]:
        changed = [
            p.name
            for p in ctx.command.params
            if isinstance(p, click.Option) and p.name and p.name not in ALLOWED_WITH_FILE and p.expose_value
            and ctx.get_parameter_source(p.name) != click.core.ParameterSource.DEFAULT
        ]  # fmt: skip
        if changed:
            raise PluginError(f"the following flags are incompatible with --file: {[c.replace('_', '-') for c in changed]}")  # fmt: skip
        config = _config_file(Path(flags["file"]))
        if config.name and name and config.name != name:
            raise PluginError(
                f'the cluster name in the config file "{config.name}" does not match the cluster name "{name}". '
                "You must use the same name to perform this operation"
            )
        name = name or config.name
        if not name:
            raise PluginError("the cluster name is required")
        namespace = _file_namespace(config, kube_flags)
    else:
        if not name:
            raise click.UsageError("cluster [CLUSTERNAME]")
        config = _config_from_flags(ctx, flags)
        namespace = kube_flags.namespace or ""
        first = config.worker_groups[0]
        try:
            generation.validate_tpu(first.tpu, first.num_of_hosts, first.node_selectors)
        except generation.ClusterConfigError as e:
            raise PluginError(str(e)) from e

    if flags["dry_run"]:
        click.echo(create_ops.dry_run(config, name, namespace or kube.namespace(kube_flags)), nl=False)
        return
    run(lambda k: create_ops.cluster(k, config, name, namespace or k.namespace, wait=flags["wait"], timeout=flags["timeout"]))  # fmt: skip


def _config_file(path: Path) -> generation.ClusterConfig:
    if not path.exists():
        raise PluginError(f"failed to parse config file: config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
        config = generation.parse_config(data)
    except (yaml.YAMLError, generation.ClusterConfigError) as e:
        raise PluginError(f"failed to parse config file: {e}") from e
    try:
        generation.validate_config(config)
    except generation.ClusterConfigError as e:
        raise PluginError(f"failed to validate config file: {e}") from e
    return config


def _file_namespace(config: generation.ClusterConfig, flags: KubeFlags) -> str:
    if flags.namespace and config.namespace and flags.namespace != config.namespace:
        raise PluginError(
            f'the namespace in the config file "{config.namespace}" does not match the namespace "{flags.namespace}". '
            f"You must pass --namespace={config.namespace} to perform this operation"
        )
    return config.namespace or flags.namespace or ""


def _config_from_flags(ctx: click.Context, flags: dict[str, Any]) -> generation.ClusterConfig:
    for name in ("head_cpu", "head_gpu", "head_memory", "head_ephemeral_storage", "worker_cpu", "worker_gpu",
                 "worker_tpu", "worker_memory", "worker_ephemeral_storage"):  # fmt: skip
        source = ctx.get_parameter_source(name)
        if flags[name] != "" or source != click.core.ParameterSource.DEFAULT:
            try:
                generation.validate_quantity(flags[name], name.replace("_", "-"))
            except generation.ClusterConfigError as e:
                raise PluginError(str(e)) from e
    image = flags["image"] or f"rayproject/ray:{flags['ray_version']}"
    if image == generation.RAY_IMAGE and flags["ray_version"] != generation.RAY_VERSION:
        image = f"rayproject/ray:{flags['ray_version']}"
    return generation.ClusterConfig(
        labels=flags["labels"],
        annotations=flags["annotations"],
        ray_version=flags["ray_version"],
        image=image,
        head=generation.Head(
            cpu=flags["head_cpu"], memory=flags["head_memory"], gpu=flags["head_gpu"],
            ephemeral_storage=flags["head_ephemeral_storage"],
            ray_start_params=flags["head_ray_start_params"], node_selectors=flags["head_node_selectors"],
        ),
        worker_groups=[generation.WorkerGroup(
            name="default-group", replicas=flags["worker_replicas"], num_of_hosts=flags["num_of_hosts"],
            cpu=flags["worker_cpu"], memory=flags["worker_memory"], gpu=flags["worker_gpu"], tpu=flags["worker_tpu"],
            ephemeral_storage=flags["worker_ephemeral_storage"],
            ray_start_params=flags["worker_ray_start_params"], node_selectors=flags["worker_node_selectors"],
        )],
        autoscaler=generation.Autoscaler(version=flags["autoscaler"].lower()) if flags["autoscaler"] else None,
    )  # fmt: skip


@create.command("workergroup")
@click.argument("name")
@click.option(
    "-c",
    "--ray-cluster",
    required=True,
    help="Ray cluster to add the worker group to",
    shell_complete=_cluster_names,
)
@click.option("--ray-version", default=generation.RAY_VERSION, show_default=True, help="Ray version to use")
@click.option("--image", default=generation.RAY_IMAGE, show_default=True, help="container image to use")
@click.option("--worker-replicas", default=1, show_default=True, help="desired worker group replicas")
@click.option("--num-of-hosts", default=1, show_default=True, help="number of hosts per replica")
@click.option("--worker-min-replicas", default=1, show_default=True, help="minimum worker group replicas")
@click.option("--worker-max-replicas", default=10, show_default=True, help="maximum worker group replicas")
@click.option("--worker-cpu", default="2", show_default=True, help="number of CPUs in each worker replica")
@click.option("--worker-gpu", default="0", show_default=True, help="number of GPUs in each worker replica")
@click.option("--worker-tpu", default="0", show_default=True, help="number of TPUs in each worker replica")
@click.option(
    "--worker-memory", default="4Gi", show_default=True, help="amount of memory in each worker replica"
)
@key_value_option("--worker-ray-start-params", "arguments to the Ray workers' 'ray start'")
@key_value_option("--worker-node-selectors", "node selectors of the worker pods")
@kube_options
def create_workergroup(name: str, ray_cluster: str, **flags: Any) -> None:
    """Create a worker group in an existing Ray cluster."""
    for flag in ("worker_cpu", "worker_gpu", "worker_tpu", "worker_memory"):
        try:
            generation.validate_quantity(flags[flag], flag.replace("_", "-"))
        except generation.ClusterConfigError as e:
            raise PluginError(str(e)) from e
    try:
        generation.validate_tpu(flags["worker_tpu"], flags["num_of_hosts"], flags["worker_node_selectors"])
    except generation.ClusterConfigError as e:
        raise PluginError(str(e)) from e
    group = create_ops.worker_group_spec(
        name, image=flags["image"] or f"rayproject/ray:{flags['ray_version']}",
        replicas=flags["worker_replicas"], num_of_hosts=flags["num_of_hosts"],
        min_replicas=flags["worker_min_replicas"], max_replicas=flags["worker_max_replicas"],
        cpu=flags["worker_cpu"], memory=flags["worker_memory"], gpu=flags["worker_gpu"], tpu=flags["worker_tpu"],
        ray_start_params=flags["worker_ray_start_params"], node_selectors=flags["worker_node_selectors"],
    )  # fmt: skip
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


@ray.group(cls=AliasGroup)
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
@click.argument("target", shell_complete=_cluster_names)
@click.option("-v", "--verbose", is_flag=True, help="verbose output")
@kube_options
def session_command(target: str, verbose: bool) -> None:
    """Forward local ports to the Ray resources (RAYCLUSTER or TYPE/NAME)."""
    try:
        kind, name = session.parse_target(target)
    except kube.TargetError as e:
        raise click.UsageError(str(e)) from e

    async def resolve(k: kube.Kube) -> tuple[str, list[str]]:
        service = await session.head_service(k, kind, name)
        context = _flags().context or k.context
        return service, session.kubectl_args(_flags(), context, k.namespace, service, session.PORTS[kind])

    service, args = run(resolve)
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
@click.option("--ray-version", default=generation.RAY_VERSION, show_default=True, help="Ray version to use")
@click.option("--image", default=generation.RAY_IMAGE, show_default=True, help="container image to use")
@click.option("--head-cpu", default="2", show_default=True, help="number of CPUs in the Ray head")
@click.option("--head-memory", default="4Gi", show_default=True, help="amount of memory in the Ray head")
@click.option("--head-gpu", default="0", show_default=True, help="number of GPUs in the Ray head")
@click.option("--worker-replicas", default=1, show_default=True, help="desired worker group replicas")
@click.option("--worker-cpu", default="2", show_default=True, help="number of CPUs in each worker replica")
@click.option(
    "--worker-memory", default="4Gi", show_default=True, help="amount of memory in each worker replica"
)
@click.option("--worker-gpu", default="0", show_default=True, help="number of GPUs in each worker replica")
@click.option("--dry-run", is_flag=True, help="print the generated RayJob instead of creating it")
@click.option("-v", "--verbose", is_flag=True, help="verbose output")
@key_value_option("--head-node-selectors", "node selectors of the head pod")
@key_value_option("--worker-node-selectors", "node selectors of the worker pods")
@click.option(
    "--ttl-seconds-after-finished",
    type=int,
    default=None,
    help="delete the cluster this long after the job ends",
)
@kube_options
def job_submit(
    entrypoint: tuple[str, ...], log_style: str | None, log_color: str | None, **flags: Any
) -> None:
    """Submit a Ray job to a RayJob's cluster: kubectl ray job submit [OPTIONS] -- ENTRYPOINT."""
    options = job.Submit(entrypoint=list(entrypoint), **flags)
    job.validate(options)
    run(lambda k: job.submit(k, _flags(), options))


@ray.command("log")
@click.argument("target", shell_complete=_cluster_names)
@click.option("--out-dir", default=None, help="directory to save the logs to")
@click.option("--node-type", type=click.Choice(log_ops.NODE_TYPES, case_sensitive=False), default="all",
              show_default=True, help="type of Ray node from which to download logs")  # fmt: skip
@click.option("--link", default=None, help="print a link to a cloud console to view logs, supports: 'gke'")
@kube_options
def log_command(target: str, out_dir: str | None, node_type: str, link: str | None) -> None:
    """Download the logs of a Ray cluster's nodes (RAYCLUSTER or TYPE/NAME)."""
    try:
        [(kind, name)] = delete_ops.parse_targets([target])
    except kube.TargetError as e:
        raise click.UsageError(str(e)) from e
    node_type = node_type.lower()
    if link is not None:
        if link != "gke":
            raise PluginError(f'unsupported link type "{link}", only "gke" is supported')
        if out_dir is not None:
            raise PluginError("--out-dir is incompatible with --link")

    async def work(k: kube.Kube) -> None:
        cluster = await log_ops.cluster_name(k, kind, name)
        if link is not None:
            click.echo(log_ops.gke_link(k.namespace, cluster, node_type, _flags().context or k.context))
            return
        created = out_dir is None
        directory = Path(out_dir or name)
        if created:
            directory.mkdir(parents=True, exist_ok=True)
        elif not directory.is_dir():
            raise PluginError("Path is not a directory. Please input a directory and try again")
        await log_ops.download(k, _flags(), cluster, node_type, directory, created)

    run(work)


SHELL_COMP_DIRECTIVE_NO_FILE_COMP = 4  # cobra's ShellCompDirectiveNoFileComp


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
    except PluginError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
