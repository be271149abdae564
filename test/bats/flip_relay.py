#!/usr/bin/env python3
"""flip_relay.py: a TCP relay for the replication tests that damages bytes.

    flip_relay.py LISTEN_ADDR LISTEN_PORT TARGET_ADDR TARGET_PORT FLIP_AT
    flip_relay.py --every N SEED LISTEN_ADDR LISTEN_PORT TARGET_ADDR TARGET_PORT
    flip_relay.py --length-at OFFSET LISTEN_ADDR LISTEN_PORT TARGET_ADDR TARGET_PORT

Accepts connections on LISTEN_ADDR:LISTEN_PORT and relays each to
TARGET_ADDR:TARGET_PORT, both ways.  The direction from the client to the
target is read as the frames of mq-replicate's link (a 4-byte big-endian
length, then that many bytes), and a damaged byte (XORed with 0x40) is
always inside a frame's payload past the three frames of the handshake,
so that the damage is to the encrypted data, never to a frame's length or
to the handshake.

With FLIP_AT, on the first connection only, the first payload byte at or
after stream offset FLIP_AT is damaged, once; later connections are
relayed faithfully.  With --every N, on every connection, each payload
byte is damaged with probability 1/N: the gaps between damaged bytes are
drawn from a generator seeded with SEED and the connection's number, so
where a connection is damaged depends on its offsets only, not on how the
stream was cut into reads.  With --length-at, on the first connection
only, the length of the first frame that begins at or after stream offset
OFFSET (past the handshake) is raised by 4 MiB: the reader then waits for
bytes that never come, the writer for an answer.  Everything else is
relayed as it is.

What happens is written to standard output, one line each, flushed:
"listening", "conn N open", "conn N flipped offset X frame F",
"conn N lengthened frame F at offset X", "conn N closed".  When one side closes, what the other side had sent is
still delivered before the relay closes its end: the client gets whatever
the target said (such as an error frame) before the end of the stream.
"""
import random
import socket
import sys
import threading

lock = threading.Lock()


def say(text):
    with lock:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


class Flipper:
    """Follows the frames of one direction and damages payload bytes: the
    first at or after offset first (None: a gap after the handshake),
    then each after a gap that gap() draws (None: no more)."""

    def __init__(self, conn, first, gap=lambda: None, length_at=None):
        self.conn = conn
        self.length_at = length_at
        self.flip_at = first
        self.gap = gap
        self.relative = first is None and length_at is None
        self.offset = 0         # stream offset of the next byte fed
        self.frame = 0          # index of the current frame
        self.hdr = b""
        self.hdr_left = 4
        self.payload_left = 0

    def lengthen(self):
        """Raises the length in self.hdr if it is the one to damage."""
        if self.length_at is None or self.frame < 3 or \
                self.hdr_start < self.length_at:
            return False
        self.length_at = None
        n = int.from_bytes(self.hdr, "big") + (4 << 20)
        self.hdr = n.to_bytes(4, "big")
        say("conn %d lengthened frame %d at offset %d" %
            (self.conn, self.frame, self.hdr_start))
        return True

    def feed(self, data):
        buf = bytearray(data)
        base = self.offset
        i = 0
        n = len(buf)
        while i < n:
            if self.hdr_left == 4:
                self.hdr_start = base + i
            if self.hdr_left:
                take = min(self.hdr_left, n - i)
                self.hdr += bytes(buf[i:i + take])
                self.hdr_left -= take
                i += take
                # A header is changed only when it began in this read
                # (what came before is sent already).
                start = self.hdr_start - base
                if not self.hdr_left and start >= 0 and self.lengthen():
                    buf[start:start + 4] = self.hdr
                if not self.hdr_left:
                    self.payload_left = int.from_bytes(self.hdr, "big")
                    self.hdr = b""
                    if not self.payload_left:
                        self.frame += 1
                        self.hdr_left = 4
                continue
            take = min(self.payload_left, n - i)
            if self.relative and self.frame >= 3:
                self.relative = False
                self.flip_at = base + i + self.gap()
            while self.flip_at is not None and self.frame >= 3 and \
                    base + i + take > self.flip_at:
                at = max(i, self.flip_at - base)
                buf[at] ^= 0x40
                say("conn %d flipped offset %d frame %d" %
                    (self.conn, base + at, self.frame))
                gap = self.gap()
                self.flip_at = None if gap is None else base + at + 1 + gap
            self.payload_left -= take
            i += take
            if not self.payload_left:
                self.frame += 1
                self.hdr_left = 4
        self.offset += n
        return bytes(buf)


def pump(src, dst, flipper):
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        if not data:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            return
        if flipper:
            data = flipper.feed(data)
        try:
            dst.sendall(data)
        except OSError:
            # The other end is gone: keep reading (and dropping) what
            # this side sends, so that it is not reset before it has
            # read what the other end said last.
            while True:
                try:
                    if not src.recv(65536):
                        return
                except OSError:
                    return


def relay(conn, client, target, flipper):
    say("conn %d open" % conn)
    try:
        server = socket.create_connection(target)
    except OSError as e:
        say("conn %d cannot connect: %s" % (conn, e))
        client.close()
        return
    up = threading.Thread(target=pump, args=(client, server, flipper))
    down = threading.Thread(target=pump, args=(server, client, None))
    up.start()
    down.start()
    up.join()
    down.join()
    client.close()
    server.close()
    say("conn %d closed" % conn)


def flipper_for(conn, args):
    """The damage for connection conn, as the arguments say (or None)."""
    if args[0] == "--length-at":
        return Flipper(conn, None, length_at=int(args[1])) if conn == 1 \
            else None
    if args[0] != "--every":
        return Flipper(conn, int(args[4])) if conn == 1 else None
    every = float(args[1])
    rng = random.Random("%s.%d" % (args[2], conn))

    def gap():
        return int(rng.expovariate(1.0 / every))
    return Flipper(conn, None, gap)


def main():
    args = sys.argv[1:]
    skip = {"--every": 3, "--length-at": 2}.get(args[0], 0)
    laddr, lport, taddr, tport = args[skip:skip + 4]
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((laddr, int(lport)))
    ls.listen(8)
    say("listening")
    conn = 0
    while True:
        client, _ = ls.accept()
        conn += 1
        threading.Thread(target=relay, daemon=True,
                         args=(conn, client, (taddr, int(tport)),
                               flipper_for(conn, args))).start()


if __name__ == "__main__":
    main()
