#!/usr/bin/env bash
# README command 2: create .venv, install groundbot with dev tools, lint, type-check and test.
#   bash scripts/test.sh          everything (what CI runs through .ci/run)
#   bash scripts/test.sh --fast   the contributor's lane: reuses .venv, and leaves out the tests marked
#                                 slow, postgres, browser or processes (pyproject.toml's markers)
set -euo pipefail
cd "$(dirname "$0")/.."
fast=0
if [ "${1:-}" = "--fast" ]; then
    fast=1
elif [ -n "${1:-}" ]; then
    echo "usage: bash scripts/test.sh [--fast]" >&2
    exit 2
fi
# the PostgreSQL variants of the transcript and serve tests start a real server on 127.0.0.1 from
# Debian's postgresql package; install it where we may (root, as in CI), else they skip loudly
# the report-page test looks at the page in Debian's Chromium (headless, local file only)
wanted=""
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || wanted="postgresql"
command -v chromium >/dev/null || wanted="$wanted chromium"
if [ "$fast" = 0 ] && [ -n "$wanted" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing Debian's $wanted for the PostgreSQL and report-page tests" >&2
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $wanted >/dev/null
fi
# the fast lane installs only when .venv is missing or older than pyproject.toml
if [ "$fast" = 0 ] || [ ! -x .venv/bin/pytest ] || [ pyproject.toml -nt .venv/.installed ]; then
    python3 -m venv .venv
    .venv/bin/pip install -q --upgrade pip >/dev/null
    .venv/bin/pip install -q torch==2.13.0 -e '.[dev]'
    touch .venv/.installed
fi
.venv/bin/ruff check core storage models bot adapters tests bench
.venv/bin/mypy
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
if [ "$fast" = 1 ]; then
    .venv/bin/python -m pytest -q -m "not slow and not postgres and not browser and not processes"
else
    .venv/bin/python -m pytest -q
fi
