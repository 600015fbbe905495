"""`import openenv_gym` loads no HTTP client stack (ssl, http.client): only attaching to a server (base_url=) uses it."""

from __future__ import annotations

import subprocess
import sys


def test_import_loads_no_http_client_stack() -> None:
    code = ("import sys, openenv_gym\n"
            "print(*sorted(m for m in ('ssl', 'http.client', 'urllib.request') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "", f"import openenv_gym loaded {out.stdout.strip()}"
