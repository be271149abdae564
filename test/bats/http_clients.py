#!/usr/bin/python3
"""Clients of mq-http for the tests: Server-Sent Events with requests,
WebSocket with websockets.  Each prints what it got, a line a message, so
that the test checks it.

  http_clients.py sse URL TOKEN N        the first N events' bodies, then
                                         acks them by POST while the
                                         stream is still open (after
                                         $ACK_DELAY seconds, if set)
  http_clients.py ws URL TOKEN SCRIPT    runs SCRIPT, a JSON array of
                                         steps: {"send": {...}} sends a
                                         request, {"recv": N} prints the
                                         next N answers (op and what
                                         matters), {"ack_last": true}
                                         acks the last message got
"""
import asyncio
import json
import os
import sys
import time

import requests
import websockets


def sse(url, token, n):
    got = []
    with requests.get(url, params={"access_token": token}, stream=True,
                      timeout=30) as r:
        r.raise_for_status()
        assert r.headers["Content-Type"].startswith("text/event-stream")
        ev = {}
        for line in r.iter_lines(decode_unicode=True):
            if line == "":
                if ev.get("event") == "message":
                    m = json.loads(ev["data"])
                    assert ev["id"] == m["receipt"], ev
                    got.append(m)
                    print(m["body"], flush=True)
                    if len(got) == n:
                        sse_ack(url, token, got)
                        break
                ev = {}
                continue
            if line.startswith(":"):
                continue
            k, _, v = line.partition(":")
            ev[k] = v[1:] if v.startswith(" ") else v


def sse_ack(url, token, got):
    """Acks what the stream delivered while it is open: leaving the loop
    over its lines closes the connection (urllib3 does), and the server
    gives back at once what a client that went away held, so an ack sent
    after that races the give-back, and loses whenever the server is
    quicker (issue 26, item 9)."""
    time.sleep(float(os.environ.get("ACK_DELAY", "0")))
    base = url.rsplit("/events", 1)[0]
    r = requests.post(base + "/ack", headers={"Authorization": "Bearer " + token},
                      json={"receipts": [m["receipt"] for m in got]}, timeout=10)
    print("acked", r.status_code, r.json()["settled"], flush=True)


async def ws(url, token, script):
    last = None
    async with websockets.connect(url + "?access_token=" + token,
                                  max_size=2 << 20) as c:
        for step in script:
            if "send" in step:
                await c.send(json.dumps(step["send"]))
            elif "send_raw" in step:
                await c.send(step["send_raw"])
            elif "ack_last" in step:
                await c.send(json.dumps({"op": "ack", "id": "a",
                                         "receipt": last["receipt"]}))
            elif "recv" in step:
                for _ in range(step["recv"]):
                    a = json.loads(await asyncio.wait_for(c.recv(), 10))
                    if a["op"] == "message":
                        last = a["message"]
                        print("message", last["body"], flush=True)
                    elif a["op"] == "error":
                        print("error", a.get("id"), a["status"], flush=True)
                    elif a["op"] == "published":
                        print("published", a.get("id"), len(a["ids"]), flush=True)
                    else:
                        print(a["op"], a.get("id"), flush=True)
            elif "quiet" in step:
                try:
                    a = await asyncio.wait_for(c.recv(), step["quiet"])
                    print("unexpected", a, flush=True)
                except asyncio.TimeoutError:
                    print("quiet", flush=True)
            elif "close" in step:
                await c.close()
                print("closed", c.close_code, flush=True)
                return


def main():
    kind, url, token = sys.argv[1:4]
    if kind == "sse":
        sse(url, token, int(sys.argv[4]))
        return
    try:
        asyncio.run(ws(url, token, json.loads(sys.argv[4])))
    except websockets.ConnectionClosed as e:
        print("closed by the server", e.rcvd.code if e.rcvd else None,
              *([e.rcvd.reason] if e.rcvd and e.rcvd.reason else []),
              flush=True)


main()
