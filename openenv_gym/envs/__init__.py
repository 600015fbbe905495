"""Environments served by openenv_gym workers, one folder each, all on :mod:`.base`."""

from openenv_gym.envs.base import Environment

__all__ = ["Environment"]
