#!/usr/bin/env python3
"""hostile_peer.py: a replication sender that says whatever it is told.

    hostile_peer.py SPOOL [PEER_ID] < SCRIPT

Runs "mq-replicate -s SPOOL serve --stdio" (the plain channel of --rsh)
and plays the sending side of a session with it (mq-protocol(5), REPLICATION
CHANNEL): its HELLO, as spool PEER_ID (default 32 'e'), then what SCRIPT
says, one command per line, fields separated by tabs; text fields are
Python escapes (\\n, \\x00, ...) so that anything can be sent:

    rec AT LINE [DATA [WHY]]   add a record to the batch being built: its
                               header's at, its line (@origin seq T ms args)
                               and the data; the hash is computed
    batch START END [N [TAG]]  send BATCH START END N (default: the records
                               added) with them, then read the answer
    frame PAYLOAD              send one frame as it is
    read                       read one frame

Every frame read is printed after "< ".  An ERROR frame
ends the script.  At the end of it, END is sent (unless an ERROR came);
the exit status is that of mq-replicate.
"""
import codecs
import ctypes
import subprocess
import sys


class H128(ctypes.Structure):
    _fields_ = [("low", ctypes.c_uint64), ("high", ctypes.c_uint64)]


_xxh = ctypes.CDLL("libxxhash.so.0")
_xxh.XXH3_128bits.restype = H128
_xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def xxh3_hex(data):
    h = _xxh.XXH3_128bits(data, len(data))
    return "%016x%016x" % (h.high, h.low)


def unescape(text):
    return codecs.escape_decode(text.encode())[0]


class Peer:
    def __init__(self, spool, peer_id):
        self.p = subprocess.Popen(["mq-replicate", "-s", spool, "serve",
                                   "--stdio"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, bufsize=0)
        self.peer_id = peer_id

    def send(self, payload):
        try:
            self.p.stdin.write(len(payload).to_bytes(4, "big") + payload)
            return True
        except BrokenPipeError:
            return False

    def _read_exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.p.stdout.read(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf

    def read(self):
        hdr = self._read_exact(4)
        if hdr is None:
            print("< (closed)", flush=True)
            return None
        payload = self._read_exact(int.from_bytes(hdr, "big"))
        if payload is None:
            print("< (closed)", flush=True)
            return None
        print("< " + payload.decode("ascii", "replace").rstrip("\n"),
              flush=True)
        return payload


def main():
    spool = sys.argv[1]
    peer_id = sys.argv[2] if len(sys.argv) > 2 else "e" * 32
    peer = Peer(spool, peer_id)
    peer.send(("HELLO mq-replicate 1 send %s hostile" % peer_id).encode())
    failed = False
    for want in ("HELLO", "SEEN"):
        got = peer.read()
        if got is None or not got.startswith(want.encode()):
            failed = True
            break
    recs = []
    for line in ([] if failed else sys.stdin):
        f = line.rstrip("\n").split("\t")
        if f[0] == "rec":
            at, text = int(f[1]), unescape(f[2])
            data = unescape(f[3]) if len(f) > 3 else b""
            why = unescape(f[4]) if len(f) > 4 else b""
            blob = data + why
            head = "%d %d %d %d %s\n" % (at, len(text), len(data), len(why),
                                         xxh3_hex(blob) if blob else "-")
            recs.append(head.encode() + text + blob)
        elif f[0] == "batch":
            n = int(f[3]) if len(f) > 3 else len(recs)
            tag = (" " + f[4]) if len(f) > 4 else ""
            first = "BATCH %s %s %d%s\n" % (f[1], f[2], n, tag)
            peer.send(first.encode() + b"".join(recs))
            recs = []
            got = peer.read()
            if got is None or got.startswith(b"ERROR"):
                failed = True
                break
        elif f[0] == "frame":
            peer.send(unescape(f[1]))
        elif f[0] == "read":
            got = peer.read()
            if got is None or got.startswith(b"ERROR"):
                failed = True
                break
    if not failed:
        peer.send(b"END")
        peer.send(b"")
    try:
        peer.p.stdin.close()
    except BrokenPipeError:
        pass
    # What is left (an ERROR sent after END, say) is read to the end.
    while peer.read() is not None:
        pass
    sys.exit(peer.p.wait())


if __name__ == "__main__":
    main()
