"""A name outside the cluster that this machine itself resolves, for the tests of pods resolving one."""

from __future__ import annotations

import os
import subprocess
import sys
from urllib.parse import urlsplit

import dns.exception
import dns.resolver
import pytest


def _pip_index() -> str | None:
    """The host of the package index pip is set to use here (the environment, else pip's configuration)."""
    index = os.environ.get("PIP_INDEX_URL")
    if not index:
        found = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.index-url"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        index = found.stdout.strip() if found.returncode == 0 else ""
    return urlsplit(index).hostname if index else None


def outside_name() -> str:
    """The first of the pip index's host and pypi.org that the machine's nameservers resolve (asked
    directly, so a name only in the host's /etc/hosts, which pods do not share, does not count); the test
    is skipped when the machine resolves neither."""
    candidates = [name for name in (_pip_index(), "pypi.org") if name]
    for name in candidates:
        try:
            dns.resolver.resolve(name, "A", lifetime=10)
        except dns.exception.DNSException:
            continue
        return name
    pytest.skip(f"this machine's nameservers resolve none of {', '.join(candidates)}")
