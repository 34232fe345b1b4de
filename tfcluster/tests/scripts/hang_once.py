"""A task for `tfcluster run --rdzv --watchdog`: it imports TensorFlow, then in the job's
first round (restart count 0) hangs, quiet, inside `stuck()` until the watchdog asks for its
stack and kills it; in a later round it prints `done` and exits 0.

TensorFlow's import may be quiet for longer than the watchdog's period on a busy machine,
so a thread touches `$TFCLUSTER_PROGRESS_FILE` while it runs (what `tfcluster.progress()`
does), and stops once TensorFlow is in: from then on only `stuck()`'s silence counts.
"""

import os
import threading
import time

importing = threading.Event()


def beacon():
    while not importing.wait(0.2):
        os.utime(os.environ["TFCLUSTER_PROGRESS_FILE"])


beating = threading.Thread(target=beacon)
beating.start()
import tensorflow as tf  # noqa: E402

importing.set()
beating.join()

restarts = int(os.environ["TFCLUSTER_RESTART_COUNT"])
print(f"tensorflow {tf.__version__} imported, restart count {restarts}", flush=True)


def stuck():
    time.sleep(1e9)


if restarts == 0:
    stuck()
print("done", flush=True)
