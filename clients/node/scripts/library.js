#!/usr/bin/env node
// npm pack's prepack and postpack: the package carries the functions
// library (functions/ratelimit.lua; the client derives the scripts from
// it), copied beside package.json while the tarball is made and removed
// after, so that in the repository the client reads functions/ itself.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const SOURCE = path.resolve(__dirname, "..", "..", "..", "functions", "ratelimit.lua");
const COPY = path.resolve(__dirname, "..", "ratelimit.lua");

const action = process.argv[2];
if (action === "copy") {
  if (!fs.existsSync(SOURCE)) {
    console.error(`${SOURCE}: no functions library to package (pack clients/node inside the repository)`);
    process.exit(1);
  }
  fs.copyFileSync(SOURCE, COPY);
} else if (action === "remove") {
  fs.rmSync(COPY, { force: true });
} else {
  console.error("usage: node scripts/library.js copy|remove");
  process.exit(2);
}
