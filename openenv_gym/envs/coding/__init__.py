"""``OpenEnv/Coding-v0``: untrusted Python in a limited child process; rewards from real tests."""
