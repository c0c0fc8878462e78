"use strict";

// The functions library and the standalone scripts, as packaged in lua/
// (copies of functions/ in the repository, checked by scripts/sync-lua.js).

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");

const DIR = path.join(__dirname, "..", "lua");

/** @type {string | null | undefined} */
let library;
/** @type {Map<string, {source: string, sha: string}> | undefined} */
let scripts;

/** The library's source (`FUNCTION LOAD REPLACE`), or null when not packaged. */
function librarySource() {
  if (library === undefined) {
    const file = path.join(DIR, "ratelimit.lua");
    library = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
  }
  return library;
}

/**
 * The standalone scripts by function name (`rl_gcra`, ...), each with its
 * SHA1 for EVALSHA. Empty when not packaged.
 * @returns {Map<string, {source: string, sha: string}>}
 */
function standaloneScripts() {
  if (scripts === undefined) {
    scripts = new Map();
    const dir = path.join(DIR, "scripts");
    if (fs.existsSync(dir)) {
      for (const file of fs.readdirSync(dir).sort()) {
        if (!file.endsWith(".lua")) continue;
        const source = fs.readFileSync(path.join(dir, file), "utf8");
        const base = file.slice(0, -4);
        const name = base.startsWith("rl_") ? base : `rl_${base}`;
        scripts.set(name, { source, sha: crypto.createHash("sha1").update(source).digest("hex") });
      }
    }
  }
  return scripts;
}

module.exports = { librarySource, standaloneScripts, LUA_DIR: DIR };
