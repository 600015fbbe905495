"""FinRL-v0: FinRL's multi-stock trading env on offline S&P 500 prices (see README.md here)."""
