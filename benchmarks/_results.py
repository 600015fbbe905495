"""What the benchmark scripts share: where they put their tables (named sections of
``benchmarks/RESULTS.md``) and the up-front check of a run that needs Docker.

A section is the text between ``<!-- section:NAME -->`` and ``<!-- /section:NAME -->``;
``--write`` replaces it, so hand-written notes in other sections stay as they are.

Example:
    >>> write_section("example", "## Example\\n\\n| a |", path=Path("/tmp/_results_doctest.md"))
    >>> "<!-- section:example -->" in Path("/tmp/_results_doctest.md").read_text()
    True
"""

from __future__ import annotations

import re
from pathlib import Path

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")


def write_section(name: str, body: str, after: str | None = None, path: Path = RESULTS) -> None:
    """Replace section ``name`` with ``body``; a new section goes after section ``after``
    (or at the end of the file).

    Args:
        name: The section's name in its markers.
        body: Its Markdown, heading included.
        after: The section a new one follows.
        path: The results file.
    """
    block = f"<!-- section:{name} -->\n{body}\n<!-- /section:{name} -->"
    content = path.read_text() if path.exists() else ""
    pattern = re.compile(rf"<!-- section:{re.escape(name)} -->.*?<!-- /section:{re.escape(name)} -->", re.S)
    if pattern.search(content):
        content = pattern.sub(lambda _: block, content)
    elif after is not None and f"<!-- /section:{after} -->" in content:
        end = f"<!-- /section:{after} -->"
        content = content.replace(end, f"{end}\n\n{block}", 1)
    else:
        content = f"{content.rstrip()}\n\n{block}\n" if content else f"{block}\n"
    path.write_text(content)


def require_docker(what: str, instead: str | None = None) -> None:
    """Exit with the reason, before any work, when no Docker engine answers.

    Without it a run that includes docker rows ends in ``ProviderUnavailableError``'s
    traceback after its other rows, with no table. ``DockerProvider.available`` only pings
    the engine ``DOCKER_HOST`` names; it never starts one.

    Args:
        what: The script and the argument that asks for Docker, as the message names them.
        instead: How to run the script without Docker, if it can be ("pass --provider process").

    Raises:
        SystemExit: No engine answers (exit status 1, the message on stderr).
    """
    from openenv_gym.providers.docker import DockerProvider

    ok, reason = DockerProvider.available()
    if not ok:
        raise SystemExit(f"{what} needs a Docker engine: {reason}"
                         + (f"; for this script: {instead}" if instead else ""))
