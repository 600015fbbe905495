"""``python -m openenv_gym.server``: run one worker (see :mod:`openenv_gym.server.main`)."""

from openenv_gym.server.main import main

main()
