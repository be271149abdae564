#!/usr/bin/python3
"""wslat: publish-to-delivery latency over WebSocket and Server-Sent
Events (mq-http) and over MQTT on WebSocket (mosquitto), one message at a
time, the next published once the last arrived.  Every client is
python3-websockets (or asyncio streams for SSE) in one event loop, so the
clients cost the same on every side.

  wslat.py ws  BASE TOKEN TOPIC GROUP N WARMUP   publish over one mq-http
                                                 WebSocket (sync none),
                                                 receive over another
  wslat.py sse BASE TOKEN TOPIC GROUP N WARMUP   publish the same way,
                                                 receive as events
  wslat.py mqtt PORT N WARMUP                    mosquitto: QoS 0 over its
                                                 websockets listener

Prints count=N p50_us= p90_us= p99_us= max_us= mean_us=.
"""
import asyncio
import json
import sys
import time
import urllib.parse

import websockets


def report(v):
    v.sort()
    n = len(v)
    print("count=%d p50_us=%.1f p90_us=%.1f p99_us=%.1f max_us=%.1f mean_us=%.1f"
          % (n, v[n // 2], v[n * 9 // 10], v[n * 99 // 100], v[-1], sum(v) / n))


async def mq(kind, base, token, topic, group, n, warm):
    wsurl = base.replace("http", "ws", 1) + "/v1/ws?access_token=" + token
    pub = await websockets.connect(wsurl)
    got = asyncio.Queue()
    if kind == "ws":
        sub = await websockets.connect(wsurl)
        await sub.send(json.dumps({"op": "subscribe", "topic": topic,
                                   "group": group, "credit": 100}))
        assert json.loads(await sub.recv())["op"] == "subscribed"

        async def receive():
            while True:
                a = json.loads(await sub.recv())
                if a["op"] == "message":
                    got.put_nowait(time.perf_counter_ns())
                    await sub.send(json.dumps({"op": "ack", "receipt":
                                               a["message"]["receipt"]}))
    else:
        u = urllib.parse.urlsplit(base)
        r, w = await asyncio.open_connection(u.hostname, u.port)
        w.write(("GET /v1/topics/%s/groups/%s/events?credit=100 HTTP/1.1\r\n"
                 "Host: x\r\nAuthorization: Bearer %s\r\n\r\n"
                 % (topic, group, token)).encode())

        async def receive():
            while True:
                line = await r.readline()
                if line.startswith(b"id: "):
                    receipt = line[4:].strip().decode()
                elif line.startswith(b"data: {"):
                    got.put_nowait(time.perf_counter_ns())
                    # Acked over the WebSocket: a stream holds its credit.
                    await pub.send(json.dumps({"op": "ack",
                                               "receipt": receipt}))

    task = asyncio.create_task(receive())

    async def drain_answers():
        while True:
            await pub.recv()

    answers = asyncio.create_task(drain_answers())
    lat = []
    for i in range(warm + n):
        t0 = time.perf_counter_ns()
        await pub.send(json.dumps({"op": "publish", "topic": topic, "sync": "none",
                                   "message": {"body": "x" * 100}}))
        t1 = await asyncio.wait_for(got.get(), 10)
        if i >= warm:
            lat.append((t1 - t0) / 1e3)
    task.cancel()
    answers.cancel()
    report(lat)


def mqtt_str(s):
    b = s.encode()
    return len(b).to_bytes(2, "big") + b


def mqtt_packet(kind, body):
    n, rem = len(body), b""
    while True:
        d, n = n % 128, n // 128
        rem += bytes([d | (128 if n else 0)])
        if not n:
            return bytes([kind]) + rem + body


async def mqtt_client(port, cid):
    c = await websockets.connect("ws://127.0.0.1:%d/" % port, subprotocols=["mqtt"])
    await c.send(mqtt_packet(0x10, mqtt_str("MQTT") + bytes([4, 2, 0, 60])
                             + mqtt_str(cid)))
    assert (await c.recv())[0] == 0x20          # CONNACK
    return c


async def mqtt(port, n, warm):
    sub = await mqtt_client(port, "wslat-sub")
    pub = await mqtt_client(port, "wslat-pub")
    await sub.send(mqtt_packet(0x82, (1).to_bytes(2, "big") + mqtt_str("bench")
                               + bytes([0])))
    assert (await sub.recv())[0] == 0x90        # SUBACK
    lat = []
    msg = mqtt_packet(0x30, mqtt_str("bench") + b"x" * 100)
    for i in range(warm + n):
        t0 = time.perf_counter_ns()
        await pub.send(msg)
        p = await asyncio.wait_for(sub.recv(), 10)
        t1 = time.perf_counter_ns()
        assert p[0] & 0xf0 == 0x30
        if i >= warm:
            lat.append((t1 - t0) / 1e3)
    report(lat)


def main():
    a = sys.argv
    if a[1] == "mqtt":
        asyncio.run(mqtt(int(a[2]), int(a[3]), int(a[4])))
    else:
        asyncio.run(mq(a[1], a[2], a[3], a[4], a[5], int(a[6]), int(a[7])))


main()
