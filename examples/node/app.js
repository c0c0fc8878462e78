// A rate-limited HTTP handler with ioredis and RL.GCRA.
//
// Each client (the X-Client-Id header) may make 3 requests at once, then one
// every 20 seconds (3 per minute). The limiter's reply maps onto HTTP: 429
// and Retry-After when refused, RateLimit-* headers always.
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

// [status, headers] for one request of this client.
async function rateLimit(clientId) {
  // max_burst 2, 3 per 60 s
  const [blocked, limit, remaining, retryAfter, reset] = await redis.call("RL.GCRA", `ratelimit:${clientId}`, 2, 3, 60);
  const headers = {
    "RateLimit-Limit": String(limit),
    "RateLimit-Remaining": String(remaining),
    "RateLimit-Reset": String(reset),
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
  const names = ["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After"];
  for (let i = 0; i < 4; i++) {
    const res = await get(url);
    const shown = names
      .filter((n) => res.headers[n.toLowerCase()] !== undefined)
      .map((n) => `${n}=${res.headers[n.toLowerCase()]}`)
      .join(" ");
    console.log(`${res.statusCode} ${shown}`);
  }
  server.close();
  redis.disconnect();
});
