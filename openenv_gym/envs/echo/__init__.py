"""``OpenEnv/Echo-v0``: echoes a message back; for protocol debugging and benchmarks."""
