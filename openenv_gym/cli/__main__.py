"""``python -m openenv_gym.cli``."""

import sys

from openenv_gym.cli import main

sys.exit(main())
