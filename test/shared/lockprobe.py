#!/usr/bin/env python3
"""lockprobe.py: OFD write locks on a file, without mq, for locks.bats.

  lockprobe.py hold FILE          take the lock (waiting), print "held",
                                  keep it until stdin closes or a kill
  lockprobe.py try FILE SECONDS   try without waiting every 50 ms for up
                                  to SECONDS; print the seconds it took
                                  and exit 0, or exit 1 if never granted
  lockprobe.py freeze DIR N       the issue's reproducer: hold a lock on
                                  DIR/f, start N processes that wait on it
                                  in the kernel (F_OFD_SETLKW), list DIR;
                                  print the milliseconds the listing took
                                  (exit 1 if not within 10 s)
"""
import fcntl, os, struct, sys, time

F_OFD_SETLK, F_OFD_SETLKW = 37, 38


def lock(fd, wait):
    # struct flock: l_type, l_whence, l_start, l_len, l_pid (+ padding)
    fl = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
    fcntl.fcntl(fd, F_OFD_SETLKW if wait else F_OFD_SETLK, fl)


def hold(path):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    lock(fd, True)
    print("held", flush=True)
    sys.stdin.read()


def try_(path, seconds):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            lock(fd, False)
            print("%.2f" % (time.monotonic() - t0), flush=True)
            return 0
        except OSError:
            time.sleep(0.05)
    return 1


def freeze(d, n):
    path = os.path.join(d, "f")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    lock(fd, True)
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            # The inherited descriptor shares the holder's lock: closed,
            # so that the holder's close below lets the lock go.
            os.close(fd)
            wfd = os.open(path, os.O_RDWR)
            lock(wfd, True)
            os._exit(0)
        kids.append(pid)
    time.sleep(1)   # let them all park their requests
    child = os.fork()
    if child == 0:
        os.close(fd)
        t0 = time.monotonic()
        os.listdir(d)
        print("%d" % ((time.monotonic() - t0) * 1000), flush=True)
        os._exit(0)
    rc = 1
    for _ in range(200):
        pid, st = os.waitpid(child, os.WNOHANG)
        if pid:
            rc = 0
            break
        time.sleep(0.05)
    os.close(fd)    # lets the waiters go, one after another
    for k in kids:
        os.waitpid(k, 0)
    return rc


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "hold":
        hold(sys.argv[2])
    elif cmd == "try":
        sys.exit(try_(sys.argv[2], float(sys.argv[3])))
    elif cmd == "freeze":
        sys.exit(freeze(sys.argv[2], int(sys.argv[3])))
