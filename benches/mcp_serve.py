#!/usr/bin/env python3
"""Serve-mode benchmark with the official MCP Python SDK as the client (issue 12's figures).

Measures, in one run and with the same client:
  - start → first complete tools/list answer: each reference server alone, and
    `toolsearch serve` in front of all three (tools mode);
  - per-call latency of everything's get-sum: calling the server directly over stdio and over
    streamable HTTP, and through `toolsearch serve` (tool_call in tools mode) over each;
  - tools/list bytes: each server's own list, their sum, and serve's list (tools and code mode).

Usage (after `npm ci` in tests/fixtures/mcp and the venv with `pip install mcp==2.3.0`):
  tests/fixtures/mcp/.venv/bin/python benches/mcp_serve.py [--calls 300] [--starts 5] [--json]
Not run in CI: it prints figures, it asserts nothing.
"""
import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = os.path.join(ROOT, "tests/fixtures/mcp/node_modules/@modelcontextprotocol")
BIN = os.path.join(ROOT, "target/release/toolsearch")


def servers(tmp):
    os.makedirs(os.path.join(tmp, "files"), exist_ok=True)
    return {
        "everything": {"command": "node", "args": [f"{MODULES}/server-everything/dist/index.js", "stdio"]},
        "memory": {
            "command": "node",
            "args": [f"{MODULES}/server-memory/dist/index.js"],
            "env": {"MEMORY_FILE_PATH": os.path.join(tmp, "memory.jsonl")},
        },
        "filesystem": {
            "command": "node",
            "args": [f"{MODULES}/server-filesystem/dist/index.js", os.path.join(tmp, "files")],
        },
    }


async def list_all(session):
    tools, size, cursor = [], 0, None
    while True:
        page = await session.list_tools(cursor=cursor) if cursor else await session.list_tools()
        size += len(json.dumps(page.model_dump(by_alias=True, exclude_none=True, mode="json")))
        tools.extend(page.tools)
        cursor = getattr(page, "nextCursor", None) or getattr(page, "next_cursor", None)
        if not cursor:
            return tools, size


async def with_stdio(command, args, env, body):
    params = StdioServerParameters(command=command, args=args, env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            return await body(session)


async def with_http(url, body):
    from mcp.client.streamable_http import streamable_http_client
    import httpx2 as httpx

    async with httpx.AsyncClient(timeout=60) as client:
        async with streamable_http_client(url, http_client=client) as streams:
            async with ClientSession(streams[0], streams[1]) as session:
                return await body(session)


async def time_to_list(command, args, env):
    started = time.perf_counter()

    async def body(session):
        await session.initialize()
        tools, size = await list_all(session)
        return time.perf_counter() - started, len(tools), size

    return await with_stdio(command, args, env, body)


async def per_call(session_factory, name, arguments, calls):
    async def body(session):
        await session.initialize()
        await list_all(session)
        for _ in range(20):  # warm-up
            await session.call_tool(name, arguments)
        samples = []
        for _ in range(calls):
            t = time.perf_counter()
            result = await session.call_tool(name, arguments)
            samples.append(time.perf_counter() - t)
            assert not result.is_error, result
        return samples

    return await session_factory(body)


def pct(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--starts", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="toolsearch-bench-")
    config = servers(tmp)
    config_path = os.path.join(tmp, "mcp.json5")
    with open(config_path, "w") as f:
        json.dump({"mcp": {"servers": config}}, f)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    out = {"start_s": {}, "list_bytes": {}, "list_tools": {}, "call_ms": {}}

    # Start → first complete tools/list.
    for name, server in config.items():
        runs = [await time_to_list(server["command"], server["args"], {**env, **server.get("env", {})})
                for _ in range(a.starts)]
        out["start_s"][name] = statistics.median(r[0] for r in runs)
        out["list_tools"][name] = runs[0][1]
        out["list_bytes"][name] = runs[0][2]
    for mode in ["tools", "code"]:
        runs = [await time_to_list(BIN, ["serve", "--mode", mode, "--config", config_path], env)
                for _ in range(a.starts)]
        out["start_s"][f"serve_{mode}"] = statistics.median(r[0] for r in runs)
        out["list_tools"][f"serve_{mode}"] = runs[0][1]
        out["list_bytes"][f"serve_{mode}"] = runs[0][2]
    out["list_bytes"]["sum_of_servers"] = sum(out["list_bytes"][n] for n in config)

    # Per-call latency of get-sum, same client, same session shape.
    everything = config["everything"]
    get_sum = {"a": 2, "b": 3}
    direct = await per_call(
        lambda body: with_stdio(everything["command"], everything["args"], env, body),
        "get-sum", get_sum, a.calls)
    only_everything = os.path.join(tmp, "everything.json5")
    with open(only_everything, "w") as f:
        json.dump({"mcp": {"servers": {"everything": everything}}}, f)
    via = {"id": "mcp:everything:get-sum", "args": get_sum}
    stdio = await per_call(
        lambda body: with_stdio(BIN, ["serve", "--mode", "tools", "--config", only_everything], env, body),
        "tool_call", via, a.calls)
    serve = subprocess.Popen([BIN, "serve", "--mode", "tools", "--config", only_everything,
                              "--http", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env)
    try:
        url = serve.stdout.readline().strip()
        http = await per_call(lambda body: with_http(url, body), "tool_call", via, a.calls)
    finally:
        serve.terminate()
        serve.wait(timeout=20)
    # The same server over streamable HTTP, called directly: the HTTP client's own cost per call.
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    node = subprocess.Popen(["node", f"{MODULES}/server-everything/dist/index.js", "streamableHttp"],
                            env={**env, "PORT": str(port)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        while "listening on port" not in node.stderr.readline().lower():
            pass
        direct_http = await per_call(lambda body: with_http(f"http://127.0.0.1:{port}/mcp", body),
                                     "get-sum", get_sum, a.calls)
    finally:
        node.terminate()
        node.wait(timeout=20)
    for name, samples in [("direct", direct), ("serve_stdio", stdio), ("direct_http", direct_http),
                          ("serve_http", http)]:
        out["call_ms"][name] = {"p50": 1e3 * statistics.median(samples), "p99": 1e3 * pct(samples, 0.99)}
    for name, baseline in [("serve_stdio", "direct"), ("serve_http", "direct_http")]:
        base = out["call_ms"][baseline]["p50"]
        out["call_ms"][name]["baseline"] = baseline
        out["call_ms"][name]["overhead_p50"] = out["call_ms"][name]["p50"] - base
        out["call_ms"][name]["ratio_p50"] = out["call_ms"][name]["p50"] / base
    slowest = max(out["start_s"][n] for n in config)
    out["ratio_serve_start_over_slowest_server"] = out["start_s"]["serve_tools"] / slowest
    out["ratio_serve_list_bytes_over_sum"] = {
        m: out["list_bytes"][f"serve_{m}"] / out["list_bytes"]["sum_of_servers"] for m in ["tools", "code"]}
    out["load_average"] = open("/proc/loadavg").read().split()[:3]
    if a.json:
        print(json.dumps(out, indent=2))
        return
    print("start → first tools/list (median of %d):" % a.starts)
    for k, v in out["start_s"].items():
        print(f"  {k:16} {v * 1e3:8.1f} ms  {out['list_tools'][k]:3} tools  {out['list_bytes'][k]:7} bytes")
    print(f"  serve_tools / slowest server: {out['ratio_serve_start_over_slowest_server']:.2f}")
    print(f"tools/list bytes: sum of servers {out['list_bytes']['sum_of_servers']}, "
          f"serve tools {out['ratio_serve_list_bytes_over_sum']['tools']:.3f}×, "
          f"code {out['ratio_serve_list_bytes_over_sum']['code']:.3f}×")
    print(f"get-sum per call ({a.calls} calls):")
    for k, v in out["call_ms"].items():
        extra = (f"  +{v['overhead_p50']:.3f} ms ({v['ratio_p50']:.2f}× {v['baseline']})"
                 if "ratio_p50" in v else "")
        print(f"  {k:12} p50 {v['p50']:.3f} ms  p99 {v['p99']:.3f} ms{extra}")
    print("load average:", " ".join(out["load_average"]))


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
