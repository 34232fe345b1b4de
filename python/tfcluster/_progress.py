"""``tfcluster.progress()``: the beacon of a program that is quiet for long, for
``tfcluster run --watchdog`` (which finds a task hung when it shows no progress for a while:
no output, no touch of its progress file). Pure Python, a file's mtime touched: the one thing
in this package that is not the Rust implementation, since the task itself must call it.
"""

import os

__all__ = ["progress"]

#: The variable ``tfcluster run --watchdog`` gives each task: the path of its progress file.
PROGRESS_FILE = "TFCLUSTER_PROGRESS_FILE"


def progress() -> None:
    """Tell ``tfcluster run --watchdog`` that this task makes progress.

    Touches the file named by ``$TFCLUSTER_PROGRESS_FILE``; a no-op outside tfcluster (the
    variable unset) or when the file is gone (its launcher ended). Call it in a loop that
    prints nothing for longer than the watchdog's period (a long checkpoint, an input
    pipeline's warm-up, a quiet training step); any output line counts as progress too.
    Never raises: a beacon must not fail the program.

    >>> import tfcluster
    >>> tfcluster.progress()  # outside tfcluster: nothing happens
    """
    path = os.environ.get(PROGRESS_FILE)
    if not path:
        return
    try:
        os.utime(path)
    except OSError:
        pass
