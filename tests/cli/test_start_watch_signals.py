"""`openenv-gym start` must stop on SIGTERM/SIGINT whenever it comes: its handler once called
threading.Event.set(), which waits for the Event's lock, and the main thread (where Python
runs handlers) holds that lock for a moment in each Event.wait(): a signal then, or a second
Ctrl-C right after the first, left `start` hung for good (`stop` timed out, workers ran on)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

# Each round runs the watch loop until a SIGTERM ends it; signals keep coming at random
# moments (those before the loop's handler is in place, or after it, are ignored). A watch
# period of 0 makes the loop wake all the time, so signals often land in the moment that hung.
SCRIPT = textwrap.dedent("""
    import os, random, signal, threading, time
    from openenv_gym.cli import pools, start

    start.WATCH_PERIOD = 0
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # what _watch restores after each round
    record = pools.PoolRecord(name="watched", env="echo", provider="process", owner_pid=os.getpid())
    pools.save(record)

    for _ in range(300):
        ended = threading.Event()

        def send():
            while not ended.is_set():
                time.sleep(random.uniform(0.0005, 0.003))
                os.kill(os.getpid(), signal.SIGTERM)

        sender = threading.Thread(target=send)
        sender.start()
        start._watch([], record)
        ended.set()
        sender.join()
    print("all rounds ended")
""")


def test_watch_ends_on_every_signal_whatever_the_moment(tmp_path) -> None:
    try:
        done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                              timeout=120, env={**os.environ, "TMPDIR": str(tmp_path)})
    except subprocess.TimeoutExpired:
        raise AssertionError("the watch loop hung in its signal handler") from None
    assert done.returncode == 0 and "all rounds ended" in done.stdout, done.stderr
