"""``OpenEnv/Git-v0``: git tasks against an in-worker git server, rewarded by checks."""
