"""How this task's interpreter started, for `tfcluster run --rdzv`'s warm restarts.

Prints `prewarm preloaded=BOOL warm=BOOL started_before=BOOL` before importing anything of
its own: preloaded, TensorFlow was imported before the script ran; warm, TFCLUSTER_WARM is
set; started_before, this process started before the time in $DIR/failed_at (false when
there is none).

With $FAIL_FIRST, the first round's task waits 2 s (the next round's warm interpreter starts
its imports meanwhile), writes the time to $DIR/failed_at and exits 3.
"""

import os
import sys
import time


def started_at():
    """This process's start, in seconds since the epoch (/proc: ticks since boot)."""
    with open("/proc/self/stat") as stat:
        ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as stat:
        boot = next(int(line.split()[1]) for line in stat if line.startswith("btime "))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


marker = os.path.join(os.environ["DIR"], "failed_at")
if os.environ.get("FAIL_FIRST") and os.environ["TFCLUSTER_RESTART_COUNT"] == "0":
    time.sleep(2)
    with open(marker, "w") as out:
        out.write(repr(time.time()))
    sys.exit(3)
failed_at = float(open(marker).read()) if os.path.exists(marker) else 0.0
print(
    "prewarm",
    f"preloaded={'tensorflow' in sys.modules}",
    f"warm={'TFCLUSTER_WARM' in os.environ}",
    f"started_before={started_at() < failed_at}",
    flush=True,
)
