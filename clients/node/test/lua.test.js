"use strict";

// The Lua the client sends: in the repository it reads
// functions/ratelimit.lua, and each script it derives from the library is
// the one functions/build.py writes, byte for byte.

const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const crypto = require("node:crypto");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { describe, it } = require("node:test");
const { libraryPath, librarySource, scriptsFromLibrary, standaloneScripts } = require("../lib/lua");
const { RateLimitError } = require("../lib/errors");

const FUNCTIONS = path.join(__dirname, "..", "..", "..", "functions");

describe("the functions library and its scripts", () => {
  it("in the repository, the client reads functions/ratelimit.lua", () => {
    assert.equal(libraryPath(), path.join(FUNCTIONS, "ratelimit.lua"));
    assert.equal(librarySource(), fs.readFileSync(path.join(FUNCTIONS, "ratelimit.lua"), "utf8"));
  });

  it("each script is what functions/build.py --out writes", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rl-node-build-"));
    try {
      execFileSync(process.env.PYTHON3 ?? "python3", [path.join(FUNCTIONS, "build.py"), "--out", dir], { encoding: "utf8" });
      const written = new Map(
        fs
          .readdirSync(dir)
          .filter((f) => f.startsWith("rl_") && f.endsWith(".lua"))
          .sort()
          .map((f) => [f.slice(0, -4), fs.readFileSync(path.join(dir, f), "utf8")]),
      );
      assert.deepEqual([...written.keys()], [
        "rl_all",
        "rl_concurrency",
        "rl_fixed",
        "rl_gcra",
        "rl_inspect",
        "rl_log",
        "rl_release",
        "rl_renew",
        "rl_sliding_counter",
        "rl_sliding_log",
        "rl_token_bucket",
        "rl_version",
      ]);
      const derived = scriptsFromLibrary(fs.readFileSync(path.join(dir, "ratelimit.lua"), "utf8"));
      assert.deepEqual(new Map([...derived].sort()), written);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // And what the client sends: the scripts of the library it loads.
    const sent = standaloneScripts();
    const source = librarySource();
    assert.ok(source !== null);
    for (const [name, text] of scriptsFromLibrary(source)) {
      assert.deepEqual(sent.get(name), { source: text, sha: crypto.createHash("sha1").update(text).digest("hex") });
    }
    assert.equal(sent.size, 12);
  });

  it("the rule, on a small library", () => {
    const text =
      "#!lua name=x\n" +
      "-- script rl_a: PRE | one three | return a()\n" +
      "-- script rl_b: PRE | two | return b()\n" +
      "-- script rl_c: PRE | one | local x = a() | two three | return x\n" +
      "-- part: one\nlocal one = 1\n" +
      "-- part: two\nlocal two = 2\n\n" +
      "-- part: three\nlocal three = 3";
    assert.deepEqual(
      scriptsFromLibrary(text),
      new Map([
        ["rl_a", "PRE\n-- part: one\nlocal one = 1\n-- part: three\nlocal three = 3return a()\n"],
        ["rl_b", "PRE\n-- part: two\nlocal two = 2\n\nreturn b()\n"],
        ["rl_c", "PRE\n-- part: one\nlocal one = 1\nlocal x = a()\n-- part: two\nlocal two = 2\n\n-- part: three\nlocal three = 3return x\n"],
      ]),
    );
  });

  it("a library the rule cannot read is a clear error", () => {
    assert.throws(() => scriptsFromLibrary("-- script rl_a: PRE | one\n-- part: one\n"), (err) => {
      assert.ok(err instanceof RateLimitError);
      assert.equal(err.message, "the library's script line for rl_a is not 'LINE | PARTS | LINE [| PARTS | LINE ...]': 'PRE | one'");
      return true;
    });
    assert.throws(() => scriptsFromLibrary("-- script rl_a: PRE | one two | return 1\n-- part: one\n"), (err) => {
      assert.ok(err instanceof RateLimitError);
      assert.equal(err.message, "the library's script line for rl_a names parts it lacks: two");
      return true;
    });
  });
});
