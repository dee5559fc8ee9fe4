// The reference architecture for `benches/cells.rs` (OpenClaw's shape): one Node.js child per
// cell, spawned with an empty environment under `--experimental-permission`, its bridge calls
// proxied to the host as JSON lines over stdin/stdout.
//
// Protocol (one JSON object per line):
//   host -> child: {"code": "<cell body>"}            first line: the body to run
//   child -> host: {"id": n, "op": "search"|"describe"|"call", "args": [...]}
//   host -> child: {"id": n, "ok": value} | {"id": n, "err": "message"}
//   child -> host: {"done": true, "value": v} | {"done": true, "error": "message"}
"use strict";
const readline = require("readline");

const rl = readline.createInterface({ input: process.stdin });
// stdout carries the protocol: console output is captured like the sandbox worker captures it.
const logs = [];
for (const level of ["log", "warn", "error"]) {
  console[level] = (...args) => logs.push({ level, text: args.map(String).join(" ") });
}
const waiting = new Map();
let nextId = 1;
let started = false;

function bridge(op, args) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    waiting.set(id, { resolve, reject });
    process.stdout.write(JSON.stringify({ id, op, args: args.map((a) => (a === undefined ? null : a)) }) + "\n");
  });
}

// A single search crosses as {hits, matched, truncated, not_found?, note} (as in js/prelude.js):
// the cell gets the hits array with the rest as properties, and a cut list's note in its logs.
function searchAnswer(value) {
  if (value === null || typeof value !== "object") return value;
  const note = value.note;
  let out = value;
  let partial = value.truncated === true || value.not_found !== undefined;
  if (Array.isArray(value.hits)) {
    out = value.hits;
    for (const key of ["matched", "truncated", "not_found"]) {
      if (value[key] !== undefined) Object.defineProperty(out, key, { value: value[key], writable: true, configurable: true });
    }
  } else {
    delete value.note;
    partial = typeof note === "string";
  }
  if (partial && typeof note === "string") logs.push({ level: "log", text: "[openclaw.tools.search] " + note });
  return out;
}

const openclaw = Object.freeze({
  tools: Object.freeze({
    search: (...args) => bridge("search", args).then(searchAnswer),
    describe: (...args) => bridge("describe", args),
    call: (...args) => bridge("call", args),
  }),
});

function finish(message) {
  process.stdout.write(JSON.stringify(message) + "\n", () => process.exit(0));
}

rl.on("line", (line) => {
  const msg = JSON.parse(line);
  if (!started) {
    started = true;
    const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor;
    const cell = new AsyncFunction("openclaw", msg.code);
    cell(openclaw).then(
      (value) => finish({ done: true, value: value === undefined ? null : value, logs }),
      (e) => finish({ done: true, error: String(e && e.message), logs }),
    );
    return;
  }
  const w = waiting.get(msg.id);
  if (!w) return;
  waiting.delete(msg.id);
  if ("ok" in msg) w.resolve(msg.ok);
  else w.reject(new Error(msg.err));
});
