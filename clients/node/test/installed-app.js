"use strict";

// The client as installed: CI (.ci/installed) runs this from an app outside
// the repository, as `node installed-app.js URL KEY`, with the app's own
// ioredis. It prints the backend found and the reply of one GCRA take; it
// fails when the library it loads is not at RL_LIBRARY (where the way it
// was installed puts it).

const Redis = require("ioredis");
const { RateLimits } = require("redis-ratelimit");
const { libraryPath } = require("redis-ratelimit/lib/lua");

(async () => {
  const [url, key] = process.argv.slice(2);
  if (libraryPath() !== process.env.RL_LIBRARY) throw new Error(`the library was read from ${libraryPath()}, not ${process.env.RL_LIBRARY}`);
  const client = new Redis(url);
  try {
    const limits = new RateLimits(client);
    const decision = await limits.gcra({ rate: 1, per: "1m", burst: 3 }).take(key);
    console.log([await limits.backend(), ...decision.raw].join(" "));
  } finally {
    client.disconnect();
  }
})().catch((err) => {
  console.error(err);
  process.exit(1);
});
