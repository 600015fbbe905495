"""Atari-v0: ALE games through ale-py, optionally preprocessed inside the worker (see README.md here)."""
