#!/usr/bin/env bash
# README command 2: create .venv, install groundbot with dev tools, lint, type-check and test.
set -euo pipefail
cd "$(dirname "$0")/.."
# the PostgreSQL variants of the transcript and serve tests start a real server on 127.0.0.1 from
# Debian's postgresql package; install it where we may (root, as in CI), else they skip loudly
# the report-page test looks at the page in Debian's Chromium (headless, local file only)
wanted=""
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || wanted="postgresql"
command -v chromium >/dev/null || wanted="$wanted chromium"
if [ -n "$wanted" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's $wanted for the PostgreSQL and report-page tests" >&2
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $wanted >/dev/null
fi
python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip >/dev/null
.venv/bin/pip install -q torch==2.13.0 -e '.[dev]'
.venv/bin/ruff check core storage bot adapters tests bench
.venv/bin/mypy
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
.venv/bin/python -m pytest -q
