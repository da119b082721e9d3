"""`kuberay-history-server`: the process. Storage as the collector's (`STORAGE_BACKEND` and the backend's
variables, or `--storage-backend local --storage-local-dir DIR`); upstream's flags where it has them
(`--storage-backend`, `--storage-root-dir`, `--dashboard-dir`, `--session-cache-max-memory`). It prints
`kuberay-history-server: listening http://<host>:<port>` once bound (port 0 picks a free one) and stops on
SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from kuberay.history.backends import from_env
from kuberay.history.server.app import HistoryApp
from kuberay.history.server.auth import Token
from kuberay.history.server.cache import ByteCache
from kuberay.history.server.catalog import Catalog
from kuberay.history.storage import (
    STORAGE_BACKEND,
    STORAGE_LOCAL_DIR,
    STORAGE_ROOT_DIR,
    StorageError,
)
from kuberay.runtime import asgiserver
from kubesemantics import quantity

TOKEN_ENV = "HISTORY_SERVER_AUTH_TOKEN"


def ray_dashboard_build() -> Path | None:
    """Ray's dashboard frontend as the installed `ray` package ships it (found without importing Ray)."""
    spec = importlib.util.find_spec("ray")
    if spec is None or spec.origin is None:
        return None
    build = Path(spec.origin).parent / "dashboard" / "client" / "build"
    return build if (build / "index.html").is_file() else None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="kuberay-history-server", description="The Ray dashboard of stored (dead) clusters."
    )
    p.add_argument("--host", default="0.0.0.0")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--storage-backend", default="", help="local or s3 (default: $STORAGE_BACKEND)")
    p.add_argument(
        "--storage-local-dir", default="", help="the local backend's directory (default: $STORAGE_LOCAL_DIR)"
    )
    p.add_argument(
        "--storage-root-dir", default="", help="a prefix of every key (default: $STORAGE_ROOT_DIR)"
    )
    p.add_argument(
        "--dashboard-dir", default="", help="Ray's dashboard build (default: the installed ray package's)"
    )
    p.add_argument(
        "--session-cache-max-memory", default="256Mi", help="bound of the answer cache, a quantity"
    )
    p.add_argument(
        "--auth-token-file", default="", help=f"a file holding the token (default: ${TOKEN_ENV}; none: open)"
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    env = dict(os.environ)
    for flag, name in (
        (args.storage_backend, STORAGE_BACKEND),
        (args.storage_local_dir, STORAGE_LOCAL_DIR),
        (args.storage_root_dir, STORAGE_ROOT_DIR),
    ):
        if flag:
            env[name] = flag
    try:
        storage = from_env(env)
        cache_bytes = quantity.ceil_value(args.session_cache_max_memory)
    except (StorageError, ValueError) as e:
        print(f"kuberay-history-server: {e}", file=sys.stderr)
        return 2
    token = Path(args.auth_token_file).read_text().strip() if args.auth_token_file else env.get(TOKEN_ENV, "")
    dashboard = Path(args.dashboard_dir) if args.dashboard_dir else ray_dashboard_build()
    catalog = Catalog(storage, env.get(STORAGE_ROOT_DIR, ""), ByteCache(cache_bytes))
    app = HistoryApp(catalog, Token(token), dashboard).build()
    return asyncio.run(_serve(app, args.host, args.port))


async def _serve(app: object, host: str, port: int) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    server = asgiserver.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))  # type: ignore[arg-type]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    task = await asgiserver.serve(server, [sock])
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    print(f"kuberay-history-server: listening http://{shown}:{sock.getsockname()[1]}", flush=True)
    await asyncio.wait([task, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
    server.should_exit = True
    await task
    return 0
