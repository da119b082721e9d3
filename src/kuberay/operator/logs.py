"""The operator's logs: zap-shaped JSON (or console) lines on stdout, optionally also to a rotating file.

Every record carries the reconcile context (`controller`, `namespace`, `name`, `reconcileID`) when it was
emitted inside a reconcile, whichever module logged it. JSON lines use zap's production keys (`level`,
`ts`, `logger`, `msg`) so log pipelines built for upstream's operator keep working. The file rotates at
500 MB and keeps 10 backups, as upstream's lumberjack settings.
"""

from __future__ import annotations

import logging
import logging.handlers
import sys
from datetime import UTC, datetime

import orjson

from kuberay.runtime.logcontext import FIELDS, ReconcileContextFilter

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "error": logging.ERROR}


def _timestamp(record: logging.LogRecord) -> str:
    return (
        datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


def _context(record: logging.LogRecord) -> dict[str, str]:
    return {key: value for key, attribute in FIELDS.items() if (value := getattr(record, attribute, ""))}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "level": record.levelname.lower(),
            "ts": _timestamp(record),
            "logger": record.name,
            "msg": record.getMessage(),
            **_context(record),
        }
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line).decode()


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), record.levelname.upper(), record.name, record.getMessage()]
        context = _context(record)
        if context:
            parts.append(orjson.dumps(context).decode())
        text = "\t".join(parts)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


def _formatter(encoder: str) -> logging.Formatter:
    return ConsoleFormatter() if encoder == "console" else JsonFormatter()


def configure(*, stdout_encoder: str, level: str, file_path: str = "", file_encoder: str = "json") -> None:
    """Replaces the root logger's handlers with the operator's."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stdout)]
    handlers[0].setFormatter(_formatter(stdout_encoder))
    if file_path:
        to_file = logging.handlers.RotatingFileHandler(file_path, maxBytes=500 * 1024 * 1024, backupCount=10)
        to_file.setFormatter(_formatter(file_encoder))
        to_file.setLevel(logging.INFO)
        handlers.append(to_file)
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    context = ReconcileContextFilter()
    for handler in handlers:
        handler.addFilter(context)
        root.addHandler(handler)
    root.setLevel(_LEVELS[level])
    # httpx2 logs every request at INFO; that is the API server's audit log's job, not ours.
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
