"""``python -m openenv_gym``: the ``openenv-gym`` command, for an install whose scripts folder
is not on ``PATH`` (``pip install --user`` without ``~/.local/bin``)."""

import sys

from openenv_gym.cli import main

sys.exit(main())
