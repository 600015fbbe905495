"""``OpenEnv/Gym-v0``: any installed Gymnasium environment, served remotely."""
