#!/usr/bin/env python3
"""outside.py: issue 20's measurement from outside, as a Python MCP client.

One Python client over stdio (`hive mcp`, and bench/floor), every variant
interleaved in one run, medians. Per round, for each pause between calls:
terminal_exec {"cmd":"true"} on hive and on the floor (the order
alternates), a raw posix_spawn of `true`; run {"cmd":"true","wait_seconds":10}
on hive and on the floor, a raw posix_spawn of `bash -c true`; a pause
before each. Prints, per pause, the medians and the ratios issue 20 states
its targets in: exec hive/spawn (<= 1.5), run hive/bash (<= 1.15), and the
floor's the same way (the floor is what a minimal Go server over the same
framing costs on this machine: a target the floor itself misses is the
machine's, not hive's).

Usage: bench/outside.sh (builds both, starts and stops the daemon), or
  outside.py --hive BIN --state DIR --floor BIN --floor-dir DIR [--rounds N] [--pauses 0,0.002,0.02]
Python 3.8+, standard library only.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


class Server:
    """An MCP server on a child's stdin and stdout, newline-delimited JSON-RPC."""

    def __init__(self, name, argv):
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=1 << 16)
        self.id = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "hive-bench-outside", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def rpc(self, method, params):
        """Calls method; returns (seconds from the write to the answer read, the result)."""
        self.id += 1
        line = (json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params}) + "\n").encode()
        t0 = time.perf_counter()
        self.p.stdin.write(line)
        self.p.stdin.flush()
        while True:
            raw = self.p.stdout.readline()
            if not raw:
                sys.exit("%s: the server closed its output" % self.name)
            msg = json.loads(raw)
            if msg.get("id") == self.id:
                took = time.perf_counter() - t0
                if "error" in msg:
                    sys.exit("%s: %s: %s" % (self.name, method, msg["error"]))
                return took, msg["result"]

    def call(self, tool, args):
        took, res = self.rpc("tools/call", {"name": tool, "arguments": args})
        if res.get("isError"):
            sys.exit("%s: %s: %s" % (self.name, tool, json.dumps(res)[:400]))
        return took

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def spawn(path, argv):
    t0 = time.perf_counter()
    pid = os.posix_spawn(path, argv, os.environ)
    os.waitpid(pid, 0)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hive", required=True, help="the hive binary")
    ap.add_argument("--state", required=True, help="hive's state dir (its daemon running, or started by `hive mcp`)")
    ap.add_argument("--floor", required=True, help="bench/floor's binary")
    ap.add_argument("--floor-dir", required=True, help="the floor's record dir")
    ap.add_argument("--rounds", type=int, default=300, help="rounds a pause (default 300)")
    ap.add_argument("--pauses", default="0,0.002,0.02", help="seconds between calls, comma-separated")
    a = ap.parse_args()
    pauses = [float(x) for x in a.pauses.split(",") if x]
    true, bash = shutil.which("true"), shutil.which("bash")
    if not true or not bash:
        sys.exit("true and bash must be on PATH")
    hive = Server("hive", [a.hive, "mcp", "--state-dir", a.state])
    floor = Server("floor", [a.floor, a.floor_dir])
    sides = [hive, floor]
    exec_args = {"cmd": "true"}
    run_args = {"cmd": "true", "wait_seconds": 10}
    for s in sides:  # every path once
        for _ in range(20):
            s.call("terminal_exec", exec_args)
            s.call("run", run_args)
    print("# %d rounds a pause; medians in us, and their ratios; Linux %s" % (a.rounds, os.uname().release))
    print("%-6s | %-44s | %-44s" % ("", "terminal_exec(\"true\")", "run(\"true\", wait_seconds 10)"))
    print("%-6s | %6s %6s %6s %7s %7s %7s | %6s %6s %6s %7s %7s %7s" % (
        "pause", "hive", "floor", "spawn", "h/spawn", "f/spawn", "h/floor",
        "hive", "floor", "bash", "h/bash", "f/bash", "h/floor"))
    for pause in pauses:
        t = {k: [] for k in ("hive-exec", "floor-exec", "spawn", "hive-run", "floor-run", "bash")}
        for i in range(a.rounds):
            order = sides if i % 2 == 0 else sides[::-1]
            for s in order:
                time.sleep(pause)
                t[s.name + "-exec"].append(s.call("terminal_exec", exec_args))
            time.sleep(pause)
            t["spawn"].append(spawn(true, ["true"]))
            for s in order:
                time.sleep(pause)
                t[s.name + "-run"].append(s.call("run", run_args))
            time.sleep(pause)
            t["bash"].append(spawn(bash, ["bash", "-c", "true"]))
        m = {k: statistics.median(v) * 1e6 for k, v in t.items()}
        print("%-6s | %6.0f %6.0f %6.0f %7.3f %7.3f %7.3f | %6.0f %6.0f %6.0f %7.3f %7.3f %7.3f" % (
            "%gms" % (pause * 1e3), m["hive-exec"], m["floor-exec"], m["spawn"],
            m["hive-exec"] / m["spawn"], m["floor-exec"] / m["spawn"], m["hive-exec"] / m["floor-exec"],
            m["hive-run"], m["floor-run"], m["bash"],
            m["hive-run"] / m["bash"], m["floor-run"] / m["bash"], m["hive-run"] / m["floor-run"]))
        sys.stdout.flush()
    for s in sides:
        s.close()


if __name__ == "__main__":
    main()
