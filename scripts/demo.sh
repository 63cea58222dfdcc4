#!/usr/bin/env bash
# README command 1: create .venv, install groundbot, ingest the bundled docs, open the console chat.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q torch==2.13.0 -e .
.venv/bin/groundbot ingest
exec .venv/bin/groundbot chat
