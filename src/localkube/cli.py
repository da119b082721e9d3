"""The `localkube` command line: `python -m localkube serve --data-dir DIR [--host H] [--port P]`, and
`localkube agent --kubeconfig FILE --node-mode simulate|process` (localkube's node against any API server).

argparse rather than a richer CLI library keeps start-up fast: tests start localkube many times.
"""

from __future__ import annotations

import argparse
import logging
import shlex
from collections.abc import Sequence
from pathlib import Path

from localkube.node import agent
from localkube.server.audit import PolicyError
from localkube.server.runner import ServeOptions, serve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="localkube", description="A Kubernetes API server in one process.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve_command = commands.add_parser("serve", help="serve the Kubernetes API over HTTPS")
    serve_command.add_argument(
        "--data-dir", type=Path, required=True, help="state, certificates and kubeconfig"
    )
    serve_command.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve_command.add_argument("--port", type=int, default=6443, help="port to listen on; 0 picks a free one")
    serve_command.add_argument(
        "--log-level", default="info", choices=["debug", "info", "warning", "error"],
        help="debug logs one line per request",
    )  # fmt: skip
    serve_command.add_argument(
        "--node-mode",
        default="simulate",
        choices=["simulate", "process", "none"],
        help="simulate: a simulated node runs the pods (default); process: pods run as local processes; "
        "none: the API server alone",
    )
    serve_command.add_argument(
        "--no-node",
        action="store_true",
        help="run the controllers but no node: pods wait for one attached with `localkube agent`",
    )
    serve_command.add_argument(
        "--schedulers",
        default="default-scheduler",
        help="comma-separated schedulerNames whose pods localkube schedules (default: default-scheduler); "
        "`volcano` and `scheduler-plugins-scheduler` add gang scheduling of their PodGroups. Pods naming "
        "another scheduler stay Pending",
    )
    serve_command.add_argument(
        "--image-entrypoint", action="append", default=[], metavar="IMAGE=COMMAND",
        help="process mode: what a container of IMAGE runs when it gives no command (the image's ENTRYPOINT, "
        "which localkube cannot read from an image it does not pull); COMMAND is split as a shell would; "
        "repeatable",
    )  # fmt: skip
    serve_command.add_argument(
        "--compact-interval", type=float, default=60.0, help="seconds between compactions of the store"
    )
    serve_command.add_argument(
        "--compact-keep", type=int, default=50_000, help="revisions kept for watch resumes at each compaction"
    )
    serve_command.add_argument(
        "--inject-faults", type=float, default=0.0, metavar="FRACTION",
        help="for tests only: refuse this share (0-1) of resource requests with 429, 500 or 409, "
        "before executing them (default 0: off)",
    )  # fmt: skip
    serve_command.add_argument(
        "--audit-log-path", type=Path, metavar="FILE",
        help="append an audit.k8s.io/v1 Event per request to FILE, as the policy asks (kube-apiserver's flag)",
    )  # fmt: skip
    serve_command.add_argument(
        "--audit-policy-file", type=Path, metavar="FILE",
        help="the audit.k8s.io/v1 Policy that says which requests are logged and how much of them",
    )  # fmt: skip
    agent_command = commands.add_parser(
        "agent", help="run localkube's node against a Kubernetes API server (as KWOK does for simulate)"
    )
    agent_command.add_argument("--kubeconfig", required=True, help="the API server to register with")
    agent_command.add_argument(
        "--node-mode", default="simulate", choices=["simulate", "process"],
        help="simulate: pods move through a simulated lifecycle (default); process: pods run as local processes",
    )  # fmt: skip
    agent_command.add_argument("--node-name", default="localkube-agent", help="the Node's name")
    agent_command.add_argument(
        "--data-dir", type=Path, help="process mode: container logs and the pods' directories"
    )
    agent_command.add_argument(
        "--node-lease-duration-seconds", type=int, default=40,
        help="the Lease's duration; it is renewed every quarter of it (default 40, as the kubelet's)",
    )  # fmt: skip
    agent_command.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    arguments = _parser().parse_args(argv)
    logging.basicConfig(
        level=arguments.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    # The node agent's probes and the proxy use httpx, which logs every request at info level.
    for name in ("httpx", "httpx2"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))
    if arguments.command == "agent":
        if arguments.node_mode == "process" and arguments.data_dir is None:
            raise SystemExit("localkube agent: --node-mode process needs --data-dir")
        agent.main(
            agent.AgentOptions(
                kubeconfig=arguments.kubeconfig,
                node_mode=arguments.node_mode,
                node_name=arguments.node_name,
                data_dir=arguments.data_dir,
                lease_seconds=arguments.node_lease_duration_seconds,
            )
        )
        return
    if (arguments.audit_log_path is None) != (arguments.audit_policy_file is None):
        raise SystemExit("localkube serve: --audit-log-path and --audit-policy-file go together")
    try:
        serve(
            ServeOptions(
                data_dir=arguments.data_dir,
                host=arguments.host,
                port=arguments.port,
                compact_interval_seconds=arguments.compact_interval,
                compact_keep=arguments.compact_keep,
                node_mode=arguments.node_mode,
                own_node=not arguments.no_node,
                schedulers=tuple(n.strip() for n in arguments.schedulers.split(",") if n.strip()),
                inject_faults=arguments.inject_faults,
                audit_log_path=arguments.audit_log_path,
                audit_policy_file=arguments.audit_policy_file,
                image_entrypoints=_entrypoints(arguments.image_entrypoint),
            )
        )
    except PolicyError as bad:
        raise SystemExit(
            f"localkube serve: --audit-policy-file {arguments.audit_policy_file}: {bad}"
        ) from None


def _entrypoints(values: list[str]) -> dict[str, tuple[str, ...]]:
    entrypoints = {}
    for value in values:
        image, sep, command = value.partition("=")
        if not sep or not image or not command.strip():
            raise SystemExit(f"localkube serve: --image-entrypoint {value!r}: expected IMAGE=COMMAND")
        entrypoints[image] = tuple(shlex.split(command))
    return entrypoints


if __name__ == "__main__":
    main()
