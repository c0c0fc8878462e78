#!/usr/bin/env node
// Copies the functions edition into the package: functions/ratelimit.lua
// (the library) and functions/scripts/*.lua (the standalone scripts) to
// lua/. With --check, copies nothing and fails when a packaged copy differs
// from its source, is missing, or has no source (run by npm test and CI).
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const SOURCE = path.resolve(__dirname, "..", "..", "..", "functions");
const TARGET = path.resolve(__dirname, "..", "lua");
const check = process.argv.includes("--check");

/** Relative paths of the .lua files under dir (the library and scripts/). */
function luaFiles(dir) {
  const files = [];
  if (fs.existsSync(path.join(dir, "ratelimit.lua"))) files.push("ratelimit.lua");
  const scripts = path.join(dir, "scripts");
  if (fs.existsSync(scripts)) {
    for (const f of fs.readdirSync(scripts).sort()) if (f.endsWith(".lua")) files.push(`scripts/${f}`);
  }
  return files;
}

const sources = luaFiles(SOURCE);
const copies = luaFiles(TARGET);
if (check) {
  const problems = [];
  for (const f of sources) {
    if (!copies.includes(f)) problems.push(`${f}: not packaged`);
    else if (!fs.readFileSync(path.join(SOURCE, f)).equals(fs.readFileSync(path.join(TARGET, f)))) problems.push(`${f}: differs from functions/${f}`);
  }
  for (const f of copies) if (!sources.includes(f)) problems.push(`${f}: packaged, but functions/${f} does not exist`);
  if (problems.length > 0) {
    console.error(`clients/node/lua is out of date (npm run sync-lua):\n  ${problems.join("\n  ")}`);
    process.exit(1);
  }
  console.log(`clients/node/lua: ${copies.length} files, each equal to its source in functions/`);
} else {
  fs.rmSync(TARGET, { recursive: true, force: true });
  for (const f of sources) {
    fs.mkdirSync(path.dirname(path.join(TARGET, f)), { recursive: true });
    fs.copyFileSync(path.join(SOURCE, f), path.join(TARGET, f));
  }
  console.log(`copied ${sources.length} files from functions/ to clients/node/lua`);
}
