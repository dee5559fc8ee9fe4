// The bridge prelude. Evaluated once per worker, before any guest code, as a
// function expression that the worker calls with its native `host` object:
//   host.call(op, argsJson) -> id (number) | refusal (string: a one-letter kind, then the message)
//     kinds: "L" the bridge-call cap, "B" arguments over the frame bound, "D" arguments nested
//     too deep, "E" any other refusal
//   host.log(level, text)   -> remaining log budget in bytes
// It installs the only globals a guest gets (`console`, `openclaw.tools`), removes every way to
// compile code from strings, and returns the internals the worker drives the cell with. `host`
// and the internals stay in this closure: the guest can never reach them.
(function (host) {
  "use strict";

  // Primitives captured before guest code can replace them.
  const G = globalThis;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const getPrototypeOf = Object.getPrototypeOf;
  const apply = Reflect.apply;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const StringCtor = String;
  const ErrorCtor = Error;
  const InternalErrorCtor = G.InternalError;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const promiseCatch = Promise.prototype.catch;
  const promiseFinally = Promise.prototype.finally;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const arrayJoin = Array.prototype.join;
  const strSlice = String.prototype.slice;
  const toWellFormed = String.prototype.toWellFormed;
  const hostCall = host.call;
  const hostLog = host.log;
  const fnToString = Function.prototype.toString;
  const isArray = Array.isArray;
  const WeakMapCtor = WeakMap;
  const weakMapSet = WeakMap.prototype.set;
  const weakMapGet = WeakMap.prototype.get;

  const pending = new MapCtor(); // id -> [resolve, reject]
  const limitErrors = new WeakMapCtor(); // refusal errors of a named limit -> its kind letter
  let logBudget = 0;

  function wellFormed(s) {
    return typeof toWellFormed === "function" ? apply(toWellFormed, s, []) : s;
  }

  // JSON across the bridge: undefined -> null; BigInt, functions, symbols -> String().
  function replacer(_key, v) {
    switch (typeof v) {
      case "undefined":
        return null;
      case "bigint":
      case "function":
      case "symbol":
        return StringCtor(v);
      default:
        return v;
    }
  }

  // Out-of-memory and engine limits must not be turned into strings: they end the cell.
  function isFatal(e) {
    return e === null || (InternalErrorCtor !== undefined && e instanceof InternalErrorCtor);
  }

  function toJson(v) {
    try {
      const s = stringify(v, replacer);
      if (typeof s === "string") return s;
    } catch (e) {
      if (isFatal(e)) throw e;
    }
    try {
      return stringify(wellFormed(StringCtor(v)));
    } catch (e) {
      if (isFatal(e)) throw e;
      return '"[unserializable]"';
    }
  }

  function begin(op, args) {
    return new PromiseCtor(function (resolve, reject) {
      const parts = [];
      for (let i = 0; i < args.length; i++) defineProperty(parts, i, { value: toJson(args[i]) });
      const r = hostCall(op, "[" + apply(arrayJoin, parts, [","]) + "]");
      if (typeof r === "string") {
        const kind = apply(strSlice, r, [0, 1]);
        const err = new ErrorCtor(apply(strSlice, r, [1]));
        if (kind !== "E") apply(weakMapSet, limitErrors, [err, kind]);
        reject(err);
        return;
      }
      // Internal only (never reachable from the guest): a plain pair, no freeze.
      apply(mapSet, pending, [r, [resolve, reject]]);
    });
  }

  // A lazy thenable: the host call starts on the first `then`, i.e. when awaited or
  // chained; a call that is never awaited never reaches the host. `adapt`, when given, maps the
  // host's value before the guest sees it.
  function lazy(op, args, adapt) {
    let promise = null;
    function started() {
      if (promise === null) {
        promise = begin(op, args);
        if (adapt !== undefined) promise = apply(promiseThen, promise, [adapt]);
      }
      return promise;
    }
    return freeze({
      then: function then(onFulfilled, onRejected) {
        return apply(promiseThen, started(), [onFulfilled, onRejected]);
      },
      catch: function (onRejected) {
        return apply(promiseCatch, started(), [onRejected]);
      },
      finally: function (onFinally) {
        return apply(promiseFinally, started(), [onFinally]);
      },
    });
  }

  function hidden(target, key, value) {
    defineProperty(target, key, { value: value, writable: true, enumerable: false, configurable: true });
  }

  // What a search covered. A single search crosses as {hits, matched, truncated, not_found?,
  // note}: the guest gets the hits array, with matched, truncated and not_found as properties
  // of it. JSON drops an array's properties, so when the list was cut or a selected name matched
  // nothing the note also goes to the cell's logs: a cell that returns the hits unchanged still
  // tells the model. A batch stays its object (each group carries matched and truncated); its
  // note, when there is one, goes to the logs the same way.
  // Each hit can be called and described where it stands: `hit.call(args)` is
  // `openclaw.tools.call(hit.id, args)`, `hit.describe()` is `openclaw.tools.describe(hit.id)`.
  // Not enumerable, so a hit serialises as before.
  function callable(hits) {
    if (!isArray(hits)) return;
    for (let i = 0; i < hits.length; i++) {
      const hit = hits[i];
      if (hit === null || typeof hit !== "object" || typeof hit.id !== "string") continue;
      const id = hit.id;
      hidden(hit, "call", function call(args) {
        return lazy("call", args === undefined ? [id] : [id, args]);
      });
      hidden(hit, "describe", function describe() {
        return lazy("describe", [id]);
      });
    }
  }

  function searchAnswer(value) {
    if (value === null || typeof value !== "object") return value;
    const note = value.note;
    let out = value;
    let partial = value.truncated === true || value.not_found !== undefined;
    if (isArray(value.hits)) {
      out = value.hits;
      callable(out);
      hidden(out, "matched", value.matched);
      hidden(out, "truncated", value.truncated === true);
      if (value.not_found !== undefined) hidden(out, "not_found", value.not_found);
    } else {
      delete value.note;
      partial = typeof note === "string";
      if (isArray(value.results)) {
        for (let i = 0; i < value.results.length; i++) {
          const group = value.results[i];
          if (group !== null && typeof group === "object") callable(group.candidates);
        }
      }
    }
    if (partial && typeof note === "string") searchNote("[openclaw.tools.search] " + note);
    return out;
  }

  const tools = freeze({
    search: function search(...args) {
      return lazy("search", args, searchAnswer);
    },
    describe: function describe(...args) {
      return lazy("describe", args);
    },
    call: function call(...args) {
      return lazy("call", args);
    },
  });

  function format(v) {
    if (typeof v === "string") return v;
    if (v === undefined) return "undefined";
    if (v instanceof ErrorCtor) {
      try {
        return StringCtor(v.name) + ": " + StringCtor(v.message);
      } catch (e) {
        if (isFatal(e)) throw e;
        return "[error]";
      }
    }
    if (typeof v === "object" && v !== null) return toJson(v);
    try {
      return StringCtor(v);
    } catch (e) {
      if (isFatal(e)) throw e;
      return "[unprintable]";
    }
  }

  function logger(level) {
    return function (...args) {
      if (logBudget <= 0) {
        logBudget = hostLog(level, "");
        return;
      }
      const parts = [];
      for (let i = 0; i < args.length; i++) defineProperty(parts, i, { value: format(args[i]) });
      let text = apply(arrayJoin, parts, [" "]);
      // Never hand the worker more than the budget (+1 so it can tell the line was cut).
      if (text.length > logBudget + 1) text = apply(strSlice, text, [0, logBudget + 1]);
      logBudget = hostLog(level, wellFormed(text));
    };
  }

  const searchNote = logger(0);

  const globalSlot = { writable: false, enumerable: false, configurable: false };
  defineProperty(G, "openclaw", { ...globalSlot, value: freeze({ tools: tools }) });
  defineProperty(G, "console", {
    ...globalSlot,
    value: freeze({ log: logger(0), warn: logger(1), error: logger(2) }),
  });

  // no code from strings. Remove the globals, then every constructor reachable from a
  // function's prototype chain: plain, async, generator and async generator functions.
  const functionPrototypes = [
    getPrototypeOf(function () {}),
    getPrototypeOf(async function () {}),
    getPrototypeOf(function* () {}),
    getPrototypeOf(async function* () {}),
  ];
  for (let i = 0; i < functionPrototypes.length; i++) {
    defineProperty(functionPrototypes[i], "constructor", {
      value: undefined,
      writable: false,
      enumerable: false,
      configurable: false,
    });
  }
  const removed = ["eval", "Function", "WebAssembly", "Atomics", "SharedArrayBuffer", "performance"];
  for (let i = 0; i < removed.length; i++) delete G[removed[i]];

  // What the worker uses; never reachable from the guest.
  return freeze({
    // Resolve (ok) with JSON text, or reject with an Error whose message is the host's message.
    settle: function (id, ok, payload) {
      const waiter = apply(mapGet, pending, [id]);
      if (waiter === undefined) return;
      apply(mapDelete, pending, [id]);
      const resolve = waiter[0];
      const reject = waiter[1];
      if (!ok) {
        reject(new ErrorCtor(payload));
        return;
      }
      let value;
      try {
        value = parse(payload);
      } catch (e) {
        reject(e);
        return;
      }
      resolve(value);
    },
    setLogBudget: function (bytes) {
      logBudget = bytes;
    },
    // The cell's value as JSON text, or its length (a number) when it exceeds `cap` UTF-16 units
    // (so the worker never copies an oversized string).
    encodeResult: function (value, cap) {
      const s = toJson(value);
      return s.length > cap ? s.length : s;
    },
    // The source text of a function (`Function.prototype.toString` as it was before any guest
    // code ran): the worker checks the compiled cell body is its own wrapper.
    sourceOf: function (f) {
      return apply(fnToString, f, []);
    },
    // [kind, message]: kind is "memory", "bridge_limit", "argument_bytes", "argument_depth" or
    // "error".
    describeError: function (e) {
      if (e === null) return ["memory", "null"];
      if (InternalErrorCtor !== undefined && e instanceof InternalErrorCtor) {
        const m = StringCtor(e.message);
        if (m === "out of memory") return ["memory", "InternalError: out of memory"];
      }
      const limit = typeof e === "object" ? apply(weakMapGet, limitErrors, [e]) : undefined;
      if (limit === "L") return ["bridge_limit", StringCtor(e.message)];
      if (limit === "B") return ["argument_bytes", StringCtor(e.message)];
      if (limit === "D") return ["argument_depth", StringCtor(e.message)];
      return ["error", wellFormed(format(e))];
    },
  });
})
