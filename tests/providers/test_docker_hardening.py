"""Hardening defaults and their override layers (no engine needed: pure option merging)."""

from __future__ import annotations

from openenv_gym.catalog import EnvInfo
from openenv_gym.providers._docker_hardening import HARDENING, container_options


def test_defaults_are_hardened():
    opts = container_options()
    assert opts["cap_drop"] == ["ALL"] and "no-new-privileges" in opts["security_opt"]
    assert opts["read_only"] is True and opts["init"] is True
    assert opts["network_mode"] == "none"
    assert opts["mem_limit"] == opts["memswap_limit"]  # no swap
    assert not opts["user"].startswith("0")
    assert {"/tmp", "/workspace"} <= set(opts["tmpfs"]) and all(
        "size=" in v for v in opts["tmpfs"].values())
    assert {u["name"] for u in opts["ulimits"]} == {"nofile", "fsize"}


def test_env_then_call_overrides_and_removal():
    info = EnvInfo("netenv", "Test/Net-v0", "x:y", "needs a network",
                   container_options={"network_mode": "bridge", "pids_limit": 256})
    opts = container_options(info.container_options, {"pids_limit": 32, "mem_limit": "2g"})
    assert opts["network_mode"] == "bridge"          # per env
    assert opts["pids_limit"] == 32                  # per call beats per env
    assert opts["mem_limit"] == opts["memswap_limit"] == "2g"  # still no swap
    assert "init" not in container_options({"init": None})
    # Docker refuses a swap limit without a memory limit: removing one removes both.
    assert not {"mem_limit", "memswap_limit"} & set(container_options({"mem_limit": None}))


def test_merging_never_mutates_the_defaults():
    opts = container_options({"tmpfs": {"/tmp": "size=1m"}})
    opts["ulimits"].append({"name": "core"})
    assert HARDENING["tmpfs"]["/tmp"] != "size=1m"
    assert len(HARDENING["ulimits"]) == 2


# RLIMIT_NPROC is counted per uid over the whole machine: worker containers must not share one.
def test_each_container_gets_a_uid_of_its_own_from_the_images_range() -> None:
    from openenv_gym.providers._docker_hardening import CONTAINER_UID, WORKER_UIDS, container_options, with_own_uid

    a, b = with_own_uid(container_options()), with_own_uid(container_options())
    uids = {int(o["user"].split(":")[0]) for o in (a, b)}
    assert all(CONTAINER_UID < uid <= CONTAINER_UID + WORKER_UIDS for uid in uids)
    for o in (a, b):
        uid = o["user"].split(":")[0]
        assert f"uid={uid},gid={uid}" in o["tmpfs"]["/workspace"]


def test_a_user_the_caller_chose_is_kept() -> None:
    from openenv_gym.providers._docker_hardening import container_options, with_own_uid

    assert with_own_uid(container_options({"user": "4242:4242"}))["user"] == "4242:4242"
