#!/usr/bin/env bash
# README command 2: create .venv, install groundbot with dev tools, lint, type-check and test.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q torch==2.13.0 -e '.[dev]'
.venv/bin/ruff check core storage bot adapters tests bench
.venv/bin/mypy
.venv/bin/python -m pytest -q
