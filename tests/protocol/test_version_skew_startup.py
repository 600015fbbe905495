"""A worker of another openenv-gym version that refuses the command line this version starts it
with (an older server lacking a newer flag: a custom Docker image built FROM an old env image, a
Ray node not upgraded) is named as a version mismatch, not only as argparse's usage text."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv_gym.errors import ProtocolError
from openenv_gym.protocol.startup import failure_in, server_argv


def _refusal(*extra: str) -> str:
    """What a real worker prints when its argparse refuses its arguments."""
    proc = subprocess.run([sys.executable, "-m", "openenv_gym.server",
                           *server_argv("echo", "{}", unix="/tmp/x.sock"), *extra],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    return proc.stdout + proc.stderr


def test_an_unknown_argument_is_named_as_a_version_mismatch() -> None:
    error = failure_in("some env output\n" + _refusal("--flag-of-a-newer-version", "1"))
    assert isinstance(error, ProtocolError)
    text = str(error)
    assert "--flag-of-a-newer-version 1" in text and "another openenv-gym version" in text
    assert "openenv-gym build ENV" in text  # and how to fix it


@pytest.mark.parametrize("prog", ["python -m openenv_gym.server", "__main__.py"])
def test_a_missing_required_argument_is_named_too(prog: str) -> None:
    # A newer worker that requires an argument an older trainer does not pass; ``__main__.py``
    # is argparse's name for a -m module that names no prog (an older server's).
    error = failure_in(f"usage: {prog} [-h] env\n"
                       f"{prog}: error: the following arguments are required: --token\n")
    assert isinstance(error, ProtocolError) and "--token" in str(error)


def test_another_programs_refusal_is_not_taken_for_a_workers() -> None:
    assert failure_in("usage: foo\nfoo: error: unrecognized arguments: --x\n") is None
