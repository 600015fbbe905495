"""A :class:`~openenv_gym.envs.git.checks.CheckContext` over plain folders, for tests that call
the checks on a repository of their own (no workspace, no confinement)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from openenv_gym.envs._exec import ExecResult, run


class FolderChecks:
    """Checks' context rooted at ``root``: ``work``, ``remotes`` and ``tmp`` beneath it."""

    def __init__(self, root: Path) -> None:
        self.work = str(root / "work")
        self.remotes = str(root / "remotes")
        self.tmp = str(root / "tmp")
        self.pins: dict = {}

    def run(self, argv: list[str], cwd: str, timeout: float = 10.0,
            env: Mapping[str, str] | None = None, agent_programs: bool = False) -> ExecResult:
        return run(argv, timeout=timeout, cwd=cwd, env={**os.environ, **(env or {})})
