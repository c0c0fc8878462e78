// A rate-limited HTTP handler with ioredis and RL.ALL: two limits, one decision.
//
// Each client (the X-Client-Id header) has two policies, decided together by
// one RL.ALL call (a request counts against both only when both allow it):
// - "burst": 3 at once, then one every 10 seconds (GCRA);
// - "hourly": 3 per hour (an exact sliding log).
// The reply maps onto the IETF rate-limit header fields
// (draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists the
// policies, RateLimit reports the binding one, and a refusal is a 429 with
// Retry-After.
//
//   npm install
//   REDIS_PORT=6379 node app.js      # serves, then calls itself 4 times
"use strict";

const http = require("node:http");
const Redis = require("ioredis");

const redis = new Redis({
  host: process.env.REDIS_HOST || "127.0.0.1",
  port: Number(process.env.REDIS_PORT || 6379),
});

// [name, algorithm and parameters, quota, window in seconds]
const POLICIES = [
  ["burst", ["GCRA", 2, 1, 10], 3, 30],
  ["hourly", ["SLIDING_LOG", 3, 3600], 3, 3600],
];
const POLICY_HEADER = POLICIES.map(([name, , quota, window]) => `"${name}";q=${quota};w=${window}`).join(", ");

// [status, headers] for one request of this client.
async function rateLimit(clientId) {
  // One hash tag per client keeps its limiters in one Cluster slot.
  const keys = POLICIES.map(([name]) => `ratelimit:{${clientId}}:${name}`);
  const specs = POLICIES.flatMap(([, spec]) => spec);
  const [blocked, , remaining, retryAfter, reset, position] = await redis.call("RL.ALL", keys.length, ...keys, ...specs);
  const binding = POLICIES[position - 1][0];
  const headers = {
    "RateLimit-Policy": POLICY_HEADER,
    RateLimit: `"${binding}";r=${remaining};t=${reset}`,
  };
  if (blocked) {
    headers["Retry-After"] = String(retryAfter);
    return [429, headers];
  }
  return [200, headers];
}

const server = http.createServer(async (req, res) => {
  const [status, headers] = await rateLimit(req.headers["x-client-id"] || req.socket.remoteAddress);
  res.writeHead(status, headers);
  res.end(status === 200 ? "ok\n" : "too many requests\n");
});

function get(url) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { "X-Client-Id": "example-node" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res));
    }).on("error", reject);
  });
}

server.listen(0, "127.0.0.1", async () => {
  const url = `http://127.0.0.1:${server.address().port}/`;
  for (let i = 0; i < 4; i++) {
    const res = await get(url);
    if (i === 0) {
      console.log(`RateLimit-Policy: ${res.headers["ratelimit-policy"]}`);
    }
    const shown = ["RateLimit", "Retry-After"]
      .filter((n) => res.headers[n.toLowerCase()] !== undefined)
      .map((n) => `${n}: ${res.headers[n.toLowerCase()]}`)
      .join(" ");
    console.log(`${res.statusCode} ${shown}`);
  }
  server.close();
  redis.disconnect();
});
