"use strict";

// The functions library, and each function's standalone script derived from
// its text (docs/functions.md, "Deriving the scripts from the library"). The
// library is the copy a package holds (`npm pack` puts it there: prepack),
// else, in the repository (a checkout, `npm install ./clients/node`),
// functions/ratelimit.lua itself.

const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const { RateLimitError } = require("./errors");

const PACKAGED = path.join(__dirname, "..", "ratelimit.lua");
const REPOSITORY = path.join(__dirname, "..", "..", "..", "functions", "ratelimit.lua");

// The lines that shape the library.
const PART = "-- part: ";
const SCRIPT = "-- script ";

/** @type {string | null | undefined} */
let library;
/** @type {Map<string, {source: string, sha: string}> | undefined} */
let scripts;

/** Where the library is read from, or null when there is none. */
function libraryPath() {
  return [PACKAGED, REPOSITORY].find((file) => fs.existsSync(file)) ?? null;
}

/** The library's source (`FUNCTION LOAD REPLACE`), or null when there is none. */
function librarySource() {
  if (library === undefined) {
    const file = libraryPath();
    library = file === null ? null : fs.readFileSync(file, "utf8");
  }
  return library;
}

/**
 * Each function's script, by name, from the library's text: a part is a
 * line that starts with `-- part: NAME` and the lines after it up to the
 * next such line; a header line (before the first part)
 * `-- script NAME: LINE | PARTS | LINE` (and on: `| PARTS | LINE`) makes
 * NAME's script: its fields in turn, each LINE with a newline after it and
 * each PARTS the parts it names (apart by spaces), whole.
 * @param {string} text
 * @returns {Map<string, string>}
 */
function scriptsFromLibrary(text) {
  /** @type {Map<string, string[]>} */
  const parts = new Map();
  /** @type {Map<string, string>} */
  const recipes = new Map();
  /** @type {string[] | null} */
  let current = null;
  // Each line with its newline, the last one without when the text has none.
  for (const line of text.split(/(?<=\n)/)) {
    if (line.startsWith(PART)) {
      current = [];
      parts.set(line.slice(PART.length).trim(), current);
    }
    if (current !== null) current.push(line);
    else if (line.startsWith(SCRIPT)) {
      const rest = line.slice(SCRIPT.length).replace(/\n$/, "");
      const at = rest.indexOf(": ");
      recipes.set(at < 0 ? rest : rest.slice(0, at), at < 0 ? "" : rest.slice(at + 2));
    }
  }
  /** @type {Map<string, string>} */
  const out = new Map();
  for (const [name, recipe] of recipes) {
    const fields = recipe.split(" | ");
    if (fields.length < 3 || fields.length % 2 === 0) {
      throw new RateLimitError(`the library's script line for ${name} is not 'LINE | PARTS | LINE [| PARTS | LINE ...]': '${recipe}'`);
    }
    const wanted = fields.filter((_, i) => i % 2 === 1).flatMap((field) => field.split(" "));
    const missing = wanted.filter((part) => !parts.has(part));
    if (missing.length > 0) throw new RateLimitError(`the library's script line for ${name} names parts it lacks: ${missing.join(", ")}`);
    const text = fields.map((field, i) => (i % 2 === 0 ? `${field}\n` : field.split(" ").map((part) => (parts.get(part) ?? []).join("")).join("")));
    out.set(name, text.join(""));
  }
  return out;
}

/**
 * The standalone scripts by function name (`rl_gcra`, ...), each with its
 * SHA1 for EVALSHA. Empty when there is no library.
 * @returns {Map<string, {source: string, sha: string}>}
 */
function standaloneScripts() {
  if (scripts === undefined) {
    scripts = new Map();
    const text = librarySource();
    if (text !== null) {
      for (const [name, source] of scriptsFromLibrary(text)) {
        scripts.set(name, { source, sha: crypto.createHash("sha1").update(source).digest("hex") });
      }
    }
  }
  return scripts;
}

module.exports = { libraryPath, librarySource, scriptsFromLibrary, standaloneScripts };
