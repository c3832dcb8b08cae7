#!/usr/bin/env python3
"""Opens a flight-recorder window (rtlab-spike-T*-*.json) in Chrome's trace
viewer (catapult's trace2html) inside headless Chromium, waits for the
import, and prints what the viewer's model holds: its threads with their
slice counts, and its import warnings. A check that the file opens in an
existing viewer, not only that it is JSON.

Needs: chromium, and a catapult checkout (github.com/catapult-project/catapult;
only `tracing/` and `third_party/` are used).

Usage: python3 bench/trace_viewer.py CATAPULT_DIR rtlab-spikes/rtlab-spike-T0-123.json [--wait 25]
Writes VIEWER.html and VIEWER.png beside the JSON.
"""
import argparse, base64, json, os, socket, struct, subprocess, sys, time, urllib.request

MODEL = ("(() => { const tv = document.querySelector('tr-ui-timeline-view');"
         " const m = tv && tv.model; return m ? {threads: m.getAllThreads().map("
         "t => t.name + ': ' + t.sliceGroup.slices.length + ' slices'),"
         " warnings: m.importWarnings.map(w => w.message)} : null; })()")


class DevTools:
    """A minimal DevTools-protocol client over a websocket (stdlib only)."""

    def __init__(self, ws_url):
        host_port, path = ws_url[len("ws://"):].split("/", 1)
        host, port = host_port.split(":")
        self.sock = socket.create_connection((host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           f"Sec-WebSocket-Version: 13\r\n\r\n").encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += self.sock.recv(4096)
        self.rest = buf.split(b"\r\n\r\n", 1)[1]
        self.next_id = 0

    def _exact(self, n):
        while len(self.rest) < n:
            self.rest += self.sock.recv(65536)
        out, self.rest = self.rest[:n], self.rest[n:]
        return out

    def _recv(self):
        _, b2 = self._exact(2)
        n = b2 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._exact(8))[0]
        return json.loads(self._exact(n))

    def call(self, method, params):
        self.next_id += 1
        data = json.dumps({"id": self.next_id, "method": method, "params": params}).encode()
        n = len(data)
        head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
        while True:
            m = self._recv()
            if m.get("id") == self.next_id:
                return m.get("result", m)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("catapult")
    p.add_argument("window")
    p.add_argument("--wait", type=float, default=25.0, help="seconds for the viewer's import")
    a = p.parse_args()
    base = os.path.splitext(os.path.abspath(a.window))[0]
    html, png = base + ".viewer.html", base + ".viewer.png"
    subprocess.run([sys.executable, os.path.join(a.catapult, "tracing", "bin", "trace2html"),
                    os.path.abspath(a.window), "--output", html], check=True, stdout=subprocess.DEVNULL)
    chrome = subprocess.Popen(["chromium", "--headless", "--no-sandbox", "--disable-gpu",
                               "--remote-debugging-port=9333", "--user-data-dir=/tmp/rtlab-viewer-profile",
                               "--window-size=1400,900", "about:blank"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                tabs = json.load(urllib.request.urlopen("http://127.0.0.1:9333/json"))
                break
            except OSError:
                time.sleep(0.1)
        dt = DevTools(next(t for t in tabs if t["type"] == "page")["webSocketDebuggerUrl"])
        dt.call("Page.navigate", {"url": "file://" + html})
        time.sleep(a.wait)
        model = dt.call("Runtime.evaluate", {"expression": MODEL, "returnByValue": True})
        shot = dt.call("Page.captureScreenshot", {"format": "png"})
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
    finally:
        chrome.kill()
    value = model.get("result", {}).get("value")
    print(json.dumps(value, indent=1))
    print(f"screenshot: {png}")
    sys.exit(0 if value and not value["warnings"] else 1)


if __name__ == "__main__":
    main()
