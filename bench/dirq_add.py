#!/usr/bin/python3
"""dirq_add.py DIR N SIZE: QueueSimple.add of N messages of SIZE bytes.

The baseline from another directory queue: python3-dirq (Debian package),
the Python port of Perl's Directory::Queue.  Run it with /usr/bin/python3
(Debian's python, which has the package), not another python3 on PATH.

DIR must not exist yet (a fresh queue).  Each add writes a temporary file,
hard-links it under its final name and unlinks the temporary one; dirq
never fsyncs, so this is a figure without any durability.

Prints one line, key=value, timed in-process (interpreter start-up and the
import are not counted):
    count=N seconds=S rate=MSGS_PER_S user=S sys=S
"""
import os
import resource
import sys
import time

from dirq.QueueSimple import QueueSimple


def main():
    if len(sys.argv) != 4:
        sys.stderr.write("usage: dirq_add.py DIR N SIZE\n")
        return 64
    path, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    if os.path.exists(path):
        sys.stderr.write("dirq_add.py: %s exists; give a fresh path\n" % path)
        return 64
    queue = QueueSimple(path)
    body = b"x" * size
    add = queue.add
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    for _ in range(n):
        add(body)
    secs = time.monotonic() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print("count=%d seconds=%.6f rate=%.1f user=%.3f sys=%.3f" % (
        n, secs, n / secs if secs > 0 else 0.0,
        r1.ru_utime - r0.ru_utime, r1.ru_stime - r0.ru_stime))
    return 0


if __name__ == "__main__":
    sys.exit(main())
