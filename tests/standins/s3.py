"""An S3-compatible object store for the tests: moto's server (PyPI `moto[server]`) started as a
subprocess on 127.0.0.1 and stopped by the test session. Each test gets a bucket of its own."""

from __future__ import annotations

import subprocess
import sys

import httpx

from tests.ports import free_port
from tests.waits import wait_until

REGION = "us-east-1"
ACCESS_KEY_ID = "groundbot-test-key"
SECRET_ACCESS_KEY = "groundbot-test-secret"


class S3Server:
    """`python -m moto.server` on a free port; `bucket()` creates a fresh, empty bucket."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._buckets = 0
        self._process: subprocess.Popen[bytes] | None = None

    def start(self, wait_s: float = 60.0) -> S3Server:
        self._process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        process = self._process

        def answers() -> bool:
            if process.poll() is not None:
                err = process.stderr.read().decode(errors="replace") if process.stderr else ""
                raise RuntimeError(f"moto.server exited with {process.returncode}: {err[-2000:]}")
            try:
                httpx.get(self.endpoint + "/moto-api/", timeout=2.0)
                return True
            except httpx.TransportError:
                return False

        try:
            wait_until(answers, wait_s, interval=0.1)
        except AssertionError:
            self.stop()
            raise RuntimeError(f"moto.server did not answer on {self.endpoint} within {wait_s:.0f} s") from None
        return self

    def bucket(self, prefix: str = "groundbot") -> str:
        """A new, empty bucket's name."""
        import boto3

        self._buckets += 1
        name = f"{prefix}-{self._buckets}"
        client = boto3.client("s3", endpoint_url=self.endpoint, region_name=REGION,
                              aws_access_key_id=ACCESS_KEY_ID, aws_secret_access_key=SECRET_ACCESS_KEY)
        client.create_bucket(Bucket=name)
        return name

    def storage_options(self) -> dict[str, str]:
        """LanceDB storage_options for this server (what [index] in config.toml builds)."""
        return {"aws_endpoint": self.endpoint, "aws_region": REGION, "allow_http": "true",
                "aws_access_key_id": ACCESS_KEY_ID, "aws_secret_access_key": SECRET_ACCESS_KEY}

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait(10)
