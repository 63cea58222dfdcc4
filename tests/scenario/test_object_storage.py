"""The chunk index on object storage: an S3-compatible server (moto, tests/standins/s3.py) on 127.0.0.1,
`groundbot ingest` in one process, questions answered by an App in another (this one).

Workers and ingests share one index only through the store, so everything here goes through
it: the asking process has no local index at all, sees a re-ingest made by another process on
its next question without a restart, and never sees half of that re-ingest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import build_app
from bot.config import load_config
from bot.config_errors import ConfigError
from core.messages import ConversationKey, Incoming
from core.text.normalize import normalize_text
from tests.standins.s3 import ACCESS_KEY_ID, REGION, SECRET_ACCESS_KEY, S3Server

ROOT = Path(__file__).resolve().parents[2]
ENV = {"GROUNDBOT_INDEX_ACCESS_KEY_ID": ACCESS_KEY_ID, "GROUNDBOT_INDEX_SECRET_ACCESS_KEY": SECRET_ACCESS_KEY}
QUESTION = "What is the gate code of the loading dock?"
GATE = """# Loading dock

The gate code of the loading dock is {code}. Deliveries arrive at the loading dock between
seven and nine in the morning; the driver types the gate code on the keypad left of the gate.
"""


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    server = S3Server().start()
    yield server
    server.stop()


def write_config(folder: Path, s3: S3Server, bucket: str, kb: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "config.toml"
    cfg.write_text(f"""
[paths]
data_dir = "{(folder / 'data').as_posix()}"
kb_paths = ["{kb.as_posix()}"]
[storage]
index_uri = "s3://{bucket}/groundbot-index"
[index_storage]
endpoint = "{s3.endpoint}"
region = "{REGION}"
allow_http = true
""", encoding="utf-8")
    return cfg


def ingest_elsewhere(cfg: Path) -> subprocess.Popen[str]:
    """`groundbot ingest` in a process of its own, credentials only in its environment."""
    env = {**os.environ, **ENV, "CI": os.environ.get("CI", "")}
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "AWS_PROFILE"):
        env.pop(name, None)
    return subprocess.Popen([sys.executable, "-m", "bot.cli.main", "--config", str(cfg), "ingest"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finished(proc: subprocess.Popen[str]) -> str:
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out
    return out


@pytest.mark.slow
def test_ingest_in_one_process_answer_in_another_and_see_a_reingest_whole(
        s3: S3Server, tmp_path: Path, embedder: Any) -> None:
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "dock.md").write_text(GATE.format(code="4711"), encoding="utf-8")
    cfg_path = write_config(tmp_path / "ingester", s3, s3.bucket(), kb)
    out = finished(ingest_elsewhere(cfg_path))
    assert "s3://" in out  # the ingest reports where the index went

    asker_dir = tmp_path / "asker"
    cfg = load_config(cfg_path, data_dir=asker_dir, environ=ENV)
    app = build_app(cfg, embedder=embedder)
    first = app.ask(Incoming(ConversationKey("test", "dock"), "u1", QUESTION))
    assert not first.refused and "4711" in first.answer, first
    assert not (asker_dir / "index").exists()  # nothing local: the index is the store's

    (kb / "dock.md").write_text(GATE.format(code="9052"), encoding="utf-8")
    finished(ingest_elsewhere(cfg_path))
    second = app.ask(Incoming(ConversationKey("test", "dock"), "u1", QUESTION))  # same process, no restart
    assert not second.refused and "9052" in second.answer and "4711" not in second.answer, second
    assert int(second.index_version) > int(first.index_version)
    # every version the re-ingest committed is whole: a worker reading at any moment between the
    # two answers finds the old document or the new one, never both and never neither
    table, vector = app.index.table(), embedder.embed_queries([normalize_text(QUESTION)])[0]
    seen = []
    for version in range(int(first.index_version) + 1, int(second.index_version) + 1):
        table.checkout(version)
        texts = " ".join(h.text for h in app.index.search(normalize_text(QUESTION), vector, 5))
        seen.append((version, "4711" in texts, "9052" in texts))
    table.checkout_latest()
    assert seen and all(old != new for _, old, new in seen), seen


def test_index_credentials_come_from_the_environment_never_the_file(tmp_path: Path) -> None:
    s3 = S3Server()  # not started: only its address is used
    cfg_path = write_config(tmp_path, s3, "bucket-x", tmp_path)
    cfg = load_config(cfg_path, environ=ENV)
    assert cfg.index_storage_options() == {
        "aws_endpoint": s3.endpoint, "aws_region": REGION, "allow_http": "true",
        "aws_access_key_id": ACCESS_KEY_ID, "aws_secret_access_key": SECRET_ACCESS_KEY}
    assert SECRET_ACCESS_KEY in [s.get_secret_value() for s in cfg.secrets.values()]  # so bot/logs/redact.py keeps it out of every log line
    text = cfg_path.read_text(encoding="utf-8") + f'secret_access_key = "{SECRET_ACCESS_KEY}"\n'
    cfg_path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="secret_access_key"):  # a key in the file is refused, not used
        load_config(cfg_path, environ=ENV)
    local = load_config(None, data_dir=tmp_path, environ=ENV)
    assert local.index_storage_options() == {} and local.index_location == str(tmp_path / "index")
