"""Where the benchmark scripts put their tables: named sections of ``benchmarks/RESULTS.md``.

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
