#!/usr/bin/python3
"""Loads a page in headless Chromium and waits for its #done to say
"done", through the DevTools protocol (python3-websockets): prints the
page's status and lists as JSON and saves a screenshot.  Exit 1 if the
page never got there (what it shows is printed all the same).

  drive.py URL SCREENSHOT.png [SECONDS]
"""
import asyncio
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import websockets

READ = """JSON.stringify({
    status: document.getElementById("status").textContent,
    sse: [...document.querySelectorAll("#sse li")].map(e => e.textContent),
    ws: [...document.querySelectorAll("#ws li")].map(e => e.textContent),
    done: document.getElementById("done").textContent})"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def browser_ws(port, deadline):
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json") as r:
                pages = [t for t in json.load(r) if t["type"] == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("chromium did not open its DevTools port")


async def drive(dws, url, shot, seconds):
    async with websockets.connect(dws, max_size=64 << 20) as c:
        n = 0

        async def call(method, **params):
            nonlocal n
            n += 1
            await c.send(json.dumps({"id": n, "method": method, "params": params}))
            while True:
                a = json.loads(await c.recv())
                if a.get("id") == n:
                    return a.get("result", {})

        await call("Page.enable")
        await call("Page.navigate", url=url)
        deadline = time.time() + seconds
        seen = {}
        while time.time() < deadline:
            r = await call("Runtime.evaluate", expression=READ)
            seen = json.loads(r.get("result", {}).get("value") or "{}")
            if seen.get("done") == "done":
                break
            await asyncio.sleep(0.1)
        png = await call("Page.captureScreenshot", format="png")
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png["data"]))
        print(json.dumps(seen, sort_keys=True))
        return seen.get("done") == "done"


def main():
    url, shot = sys.argv[1:3]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 30
    port = free_port()
    # Chromium's helpers (renderer, crashpad) outlive the browser for a
    # moment and keep writing the profile: they are killed with it, as a
    # process group, and the profile's removal forgives a late file, so
    # a finished page is never an exit 1 (seen on a busy machine).
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        chrome = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
             "--disable-dev-shm-usage", "--no-first-run",
             "--remote-allow-origins=*", f"--remote-debugging-port={port}",
             f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        try:
            dws = browser_ws(port, time.time() + 30)
            ok = asyncio.run(drive(dws, url, shot, seconds))
        finally:
            chrome.terminate()
            try:
                chrome.wait(10)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(chrome.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            chrome.wait()
    sys.exit(0 if ok else 1)


main()
