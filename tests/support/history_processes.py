"""The History Server's real parts for tests: S3Proxy (a real S3-compatible server, Java, fetched by
scripts/tools/s3proxy from Maven Central) over a directory, and `kuberay-history-server` as a user starts
it. Each is a child process of the test, stopped by its pid."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import httpx
import pytest

from kuberay.local.ports import free_port
from support.browser import chromium_page
from support.eventually import eventually

REPO = Path(__file__).resolve().parents[2]
# Where the tests keep what a person may want to look at after a run (the dashboard's screenshots).
ARTIFACTS = Path(os.environ.get("KUBERAY_TEST_ARTIFACTS", REPO / "test-artifacts"))
BIN = Path(sys.executable).parent
# Bounds on a loaded machine, not measurements: a JVM's start is several seconds on two busy cores.
START_TIMEOUT = 90.0


def s3proxy_jar() -> str | None:
    """The jar, fetched once into the tools cache; None where Java or Maven is missing."""
    if shutil.which("java") is None:
        return None
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "tools" / "s3proxy")], capture_output=True, text=True, check=False
    )
    return result.stdout.strip() if result.returncode == 0 else None


class S3Proxy:
    """S3Proxy on a free port of every address of this machine (pods reach it over localkube's bridge), with its `filesystem` store in `directory`, and one bucket."""

    IDENTITY, CREDENTIAL, REGION = "history-test", "history-test-secret", "us-east-1"

    def __init__(self, jar: str, directory: Path, bucket: str = "ray-history") -> None:
        self.jar, self.directory, self.bucket = jar, directory, bucket
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, host: str = "127.0.0.1") -> dict[str, str]:
        """The storage variables a collector or server is given for this bucket (upstream's names), reaching
        the server at `host` (a pod in its own network namespace reaches this machine at its node's
        address)."""
        return {
            "STORAGE_BACKEND": "s3", "S3_BUCKET": self.bucket, "S3_ENDPOINT": f"http://{host}:{self.port}",
            "S3_REGION": self.REGION, "S3FORCE_PATH_STYLE": "true", "S3DISABLE_SSL": "true",
            "AWS_ACCESS_KEY_ID": self.IDENTITY, "AWS_SECRET_ACCESS_KEY": self.CREDENTIAL,
        }  # fmt: skip

    def start(self) -> S3Proxy:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "store").mkdir(exist_ok=True)
        conf = self.directory / "s3proxy.conf"
        conf.write_text(
            f"s3proxy.endpoint=http://0.0.0.0:{self.port}\ns3proxy.authorization=aws-v2-or-v4\n"
            f"s3proxy.identity={self.IDENTITY}\ns3proxy.credential={self.CREDENTIAL}\n"
            f"jclouds.provider=filesystem\njclouds.filesystem.basedir={self.directory / 'store'}\n"
        )
        with (self.directory / "s3proxy.log").open("ab") as log:
            self.process = subprocess.Popen(
                ["java", "-jar", self.jar, "--properties", str(conf)], stdout=log, stderr=log
            )
        client = boto3.client(
            "s3", endpoint_url=self.endpoint, region_name=self.REGION,
            aws_access_key_id=self.IDENTITY, aws_secret_access_key=self.CREDENTIAL,
        )  # fmt: skip
        process, log = self.process, self.directory / "s3proxy.log"

        def bucket_made() -> bool:
            try:
                client.create_bucket(Bucket=self.bucket)
            except client.exceptions.BucketAlreadyOwnedByYou:
                return True  # started again over its store (an outage drill)
            except Exception:
                assert process.poll() is None, f"S3Proxy exited: {log.read_text()[-2000:]}"
                return False
            return True

        eventually(
            bucket_made,
            START_TIMEOUT,
            lambda: f"S3Proxy serving: {log.read_text()[-2000:]}",
            every=0.5,
            blocking=True,
        )
        return self

    def stop(self) -> None:
        """Stops it; `start` serves the same store on the same port again."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


class HistoryServer:
    """`kuberay-history-server --port 0` with `env` (the storage variables); `url` once it listens."""

    def __init__(self, log: Path, env: dict[str, str], *args: str) -> None:
        self.log, self.env, self.args = log, env, args
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> HistoryServer:
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [str(BIN / "kuberay-history-server"), "--host", "127.0.0.1", "--port", "0", *self.args],
                stdout=subprocess.PIPE, stderr=log, text=True, env={**os.environ, **self.env},
            )  # fmt: skip
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert "listening" in line, f"kuberay-history-server did not start: {line}{self.log.read_text()}"
        self.url = line.split()[-1]
        return self

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=30)

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.terminate()
                self.process.wait(30)
            assert self.process.stdout is not None
            self.process.stdout.close()


@contextlib.contextmanager
def running_s3proxy(directory: Path) -> Iterator[S3Proxy]:
    """S3Proxy for a test module; skips where Java or Maven is missing."""
    jar = s3proxy_jar()
    if jar is None:
        pytest.skip("S3Proxy needs Java and Maven (scripts/setup installs them as root)")
    proxy = S3Proxy(jar, directory).start()
    try:
        yield proxy
    finally:
        proxy.stop()


async def dashboard_shows_the_job(
    url: str, cluster: str, submission: str, wanted: tuple[str, ...], profile: Path, screenshot: Path
) -> None:
    """Ray's dashboard frontend, served by the History Server at `url`, on the page of the job `submission`
    of the stored `cluster` ("NAMESPACE/KIND/NAME"), until it shows each of `wanted` (each loaded by its own
    request); a screenshot of it kept at `screenshot`."""
    async with chromium_page(profile, "--window-size=1400,1000") as page:
        await page.send("Page.enable")
        await page.send("Page.navigate", url=f"{url}/enter_cluster/{cluster}")
        await page.until("document.body.innerText.includes('success')")
        await page.send("Page.navigate", url=f"{url}/#/jobs/{submission}")
        text = await page.until(
            " && ".join(f"document.body.innerText.includes({json.dumps(w)})" for w in wanted)
            + " && document.body.innerText"
        )
        await page.screenshot(screenshot)
    assert submission in text
