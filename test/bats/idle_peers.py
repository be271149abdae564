#!/usr/bin/env python3
"""idle_peers.py: connections that never finish mq-replicate's handshake.

    idle_peers.py ADDR PORT HOLD KIND:N...

Opens, one after another, N connections of each KIND to ADDR:PORT:
  idle     sends nothing;
  partial  sends 3 bytes of a frame's 4-byte length, then nothing;
  trickle  sends the length of a 64-byte frame (shorter than a hello),
           then one byte of it every 0.2 s, so that bytes keep coming but
           the frame never ends within the test.
Then it waits until the server has closed them all, or HOLD seconds.

What happens is written to standard output, one line each, flushed:
"open KIND I" as each connects, "ready" once all have, "closed KIND I
SECONDS" when the server closes one (SECONDS since it connected), and at
the end "open KIND I" again for each the server still had not closed.
"""
import select
import socket
import sys
import time


def say(text):
    print(text, flush=True)


def main():
    addr, port, hold = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    conns = []
    for spec in sys.argv[4:]:
        kind, n = spec.split(':')
        for i in range(int(n)):
            s = socket.create_connection((addr, port))
            if kind == 'partial':
                s.sendall(b'\x00\x00\x00')
            elif kind == 'trickle':
                s.sendall(b'\x00\x00\x00\x40')
            elif kind != 'idle':
                sys.exit('unknown kind ' + kind)
            conns.append({'sock': s, 'kind': kind, 'i': i,
                          'at': time.monotonic(), 'sent': 0})
            say('open %s %d' % (kind, i))
    say('ready')
    end = time.monotonic() + hold
    next_byte = time.monotonic() + 0.2
    while conns and time.monotonic() < end:
        wait = max(0, min(end, next_byte) - time.monotonic())
        readable, _, _ = select.select([c['sock'] for c in conns], [], [],
                                       wait)
        for c in [c for c in conns if c['sock'] in readable]:
            try:
                data = c['sock'].recv(4096)
            except OSError:
                data = b''
            if not data:
                gone(conns, c)
        if time.monotonic() >= next_byte:
            next_byte += 0.2
            for c in [c for c in conns if c['kind'] == 'trickle']:
                if c['sent'] >= 63:
                    continue
                try:
                    c['sock'].send(b'x')
                    c['sent'] += 1
                except OSError:
                    gone(conns, c)
    for c in conns:
        say('open %s %d' % (c['kind'], c['i']))


def gone(conns, c):
    say('closed %s %d %.2f' % (c['kind'], c['i'],
                               time.monotonic() - c['at']))
    c['sock'].close()
    conns.remove(c)


main()
