"""Every code block of README.md runs: python blocks as scripts, bash blocks through bash.

Python blocks run in fresh interpreters with ``gym``, ``np`` and ``openenv_gym`` imported (some
blocks continue the one before). Blocks that need Docker run only where an engine is reachable
(CI requires one), blocks that train are marked slow. Bash blocks that install packages are
skipped with the reason; servers started in the background get a free port instead of 8000,
the block waits until they answer (a person typing the lines does that naturally), and they are
stopped afterwards.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import uuid

import pytest

from tests.conftest import require_docker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
PRELUDE = "import gymnasium as gym\nimport numpy as np\nimport openenv_gym\n"
ENV = dict(os.environ, COLUMNS="250", PYTHONUNBUFFERED="1")
CLI = f"{sys.executable} -m openenv_gym.cli"


def _blocks() -> list[tuple[str, int, str]]:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return [(m.group(1), text[: m.start()].count("\n") + 1, m.group(2))
            for m in re.finditer(r"^```(\w+)\n(.*?)^```", text, re.S | re.M)]


def _params(lang: str) -> list:
    out = []
    for kind, line, code in _blocks():
        if kind != lang:
            continue
        marks = [pytest.mark.slow] if ".learn(" in code else []
        out.append(pytest.param(code, id=f"line{line}", marks=marks))
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_readme_has_python_and_bash_blocks() -> None:
    kinds = [kind for kind, _, _ in _blocks()]
    assert kinds.count("python") >= 2 and kinds.count("bash") >= 3


# Past the subprocess's own limit, not setup.cfg's 300 s: the SB3 block trains 50,000 steps
# (150 s alone, more under load), and the subprocess's timeout names the block that hung.
@pytest.mark.timeout(960)
@pytest.mark.parametrize("code", _params("python"))
def test_python_block(code: str, tmp_path) -> None:
    if 'provider="docker"' in code:
        require_docker()
    script = tmp_path / "block.py"
    script.write_text(PRELUDE + code)
    out = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                         timeout=900, env=ENV)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]


def _bash_script(code: str) -> str:
    """The block as a script: the CLI of this interpreter, free ports, waits, cleanup."""
    lines = []
    port = _free_port()
    pool = f"readme-{uuid.uuid4().hex[:6]}"
    for line in code.replace("8000", str(port)).replace("demo", pool).splitlines():
        line = re.sub(r"^openenv-gym\b", CLI, line)
        lines.append(line)
        if line.rstrip().endswith("&") and " serve " in line:
            lines.append(f"for i in $(seq 300); do curl -sf localhost:{port}/health >/dev/null && break; sleep 0.1; done")
        elif line.rstrip().endswith("&") and " start " in line:
            # Until its workers are up, as a person waits for `start` to print them: the
            # record, and so `ps`, shows the pool as soon as its name is taken.
            lines.append(f"for i in $(seq 600); do {CLI} logs {pool} --tail 0 >/dev/null 2>&1 && break; sleep 0.2; done")
    # Whatever a block left in the background is this test's to stop, also when a line fails
    # (set -e): left running, it would hold the output pipe and hang the test instead.
    return ("set -e\ntrap 'kill $(jobs -p) 2>/dev/null || true; wait' EXIT\n" + "\n".join(lines) + "\n")


@pytest.mark.timeout(660)  # as test_python_block's
@pytest.mark.parametrize("code", _params("bash"))
def test_bash_block(code: str, tmp_path) -> None:
    if re.search(r"^\s*(cd .*&& )?pip install", code, re.M) or "pip install -e" in code:
        pytest.skip("installs packages: .ci/run runs the README's install commands itself, and "
                    "tests/cli/test_init.py runs init -> pip install -e -> make -> step")
    out = subprocess.run(["bash", "-c", _bash_script(code)], cwd=str(tmp_path), capture_output=True,
                         text=True, timeout=600, env=ENV)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    if "curl" in code:
        assert '"echo":"hi"' in out.stdout
    if " start " in code:
        assert "web view: http://127.0.0.1:" in out.stdout and "stopped pool" in out.stdout
