"""README's table of hardening defaults says what _docker_hardening.HARDENING holds (the code
is "the one place"; the README restates it, so the two are compared here)."""

from __future__ import annotations

import re
from pathlib import Path

from openenv_gym.providers._docker_hardening import HARDENING

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def _rows() -> dict[str, str]:
    table = README.split("**Hardening defaults**", 1)[1].split("\n\n", 2)[1]
    rows = {}
    for line in table.splitlines()[2:]:
        setting, default = (cell.strip() for cell in line.strip("|").split("|")[:2])
        for key in re.findall(r"`(\w+)`", setting):
            rows[key] = default
    return rows


def test_every_default_is_in_the_table_and_every_row_is_a_default() -> None:
    assert set(_rows()) == set(HARDENING)


def test_the_tables_numbers_are_the_codes() -> None:
    rows = _rows()
    assert rows["user"].startswith(f"`{HARDENING['user']}`")
    assert f"`{HARDENING['mem_limit']}`" in rows["mem_limit"] and HARDENING["memswap_limit"] == HARDENING["mem_limit"]
    assert f"`{HARDENING['pids_limit']}`" in rows["pids_limit"]
    assert f"{HARDENING['nano_cpus']:.0e}".replace("+0", "") in rows["nano_cpus"]
    assert f"`\"{HARDENING['network_mode']}\"`" in rows["network_mode"]
    for path, options in HARDENING["tmpfs"].items():
        size = re.search(r"size=(\d+)m", options)[1]
        assert f"`{path}` {size} MiB" in rows["tmpfs"]
        files = int(re.search(r"nr_inodes=(\d+)", options)[1])
        assert f"`{path}` {files:,}" in rows["tmpfs"]
    nofile = next(u for u in HARDENING["ulimits"] if u["name"] == "nofile")["soft"]
    fsize = next(u for u in HARDENING["ulimits"] if u["name"] == "fsize")["soft"] >> 20
    assert f"`nofile` {nofile}" in rows["ulimits"] and f"`fsize` {fsize} MiB" in rows["ulimits"]
    log = HARDENING["log_config"]["config"]
    assert f"`max-size` {log['max-size']}" in rows["log_config"] and f"`max-file` {log['max-file']}" in rows["log_config"]
