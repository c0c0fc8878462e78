// A rate-limited HTTP handler with ioredis and the redis-ratelimit client:
// two limits, one decision.
//
// Each client (the X-Client-Id header) has two policies, decided together by
// one RL.ALL call (a request counts against both only when both allow it):
// - "burst": 3 at once, then one every 10 seconds (GCRA);
// - "hourly": 3 per hour (an exact sliding log).
// The decision maps onto the IETF rate-limit header fields
// (draft-ietf-httpapi-ratelimit-headers-10): RateLimit-Policy lists the
// policies, RateLimit reports the binding one, and a refusal is a 429 with
// Retry-After (the client's rateLimitHeaders; its Express middleware,
// rateLimit(), does the same for a whole app).
//
// When the (simulated) upstream work of an admitted request fails with a 5xx
// (GET /fail), the handler answers 502 and gives the request's unit back to
// both limits (a refund): the RateLimit header then shows the state after
// the refund.
//
// GET /login?account=...&password=... protects a login against guessing: 5
// failed attempts in 15 minutes, per account and per client address, lock
// both out for an hour (a refusal with block). Only failures count; while
// locked, every attempt is a 429 with Retry-After, the right password
// included.
//
//   npm install
//   REDIS_PORT=6379 node app.js      # serves, then calls itself 12 times
"use strict";

const http = require("node:http");
const Redis = require("ioredis");
const { RateLimits, rateLimitHeaders } = require("redis-ratelimit");

const redis = new Redis({
  host: process.env.REDIS_HOST || "127.0.0.1",
  port: Number(process.env.REDIS_PORT || 6379),
});
// The module where it is loaded, else its functions library (loaded if need be).
const limits = new RateLimits(redis);

const api = limits.allOf(
  limits.gcra({ rate: 1, per: "10s", burst: 3, name: "burst" }),
  limits.slidingLog({ limit: 3, window: "1h", name: "hourly" }),
);

// [blocked, headers] for one request of this client. With refund, gives the
// request's unit back to every limit instead of taking it (never refused;
// the headers show the state after the refund).
async function rateLimit(clientId, refund = false) {
  // One hash tag per client keeps its limiters in one Cluster slot.
  const keys = api.limiters.map((limiter) => `ratelimit:{${clientId}}:${limiter.name}`);
  const result = refund ? await api.refund(keys) : await api.take(keys);
  return [!result.allowed, rateLimitHeaders(api, result)];
}

// Failed logins: 5 in any 15 minutes per account and per address (exact
// sliding logs); the sixth blocks both for an hour.
const logins = limits.allOf(
  limits.slidingLog({ limit: 5, window: "15m", name: "account" }),
  limits.slidingLog({ limit: 5, window: "15m", name: "address" }),
);
const PASSWORDS = { "alice-node": "correct horse" }; // the (simulated) user database

// [blocked, headers] of a login attempt. failed=false only asks whether the
// account or the address is locked out (a query, which records nothing);
// failed=true counts a failed attempt, and the one that goes over the limit
// blocks the limits it exceeds for an hour. (Keys of two slots: on a Redis
// Cluster, make two calls, one per key, each with a block.)
async function loginLimit(account, address, failed) {
  const keys = [`login:account:${account}`, `login:address:${address}`];
  const result = failed ? await logins.take(keys, 1, { block: "1h" }) : await logins.query(keys);
  return [!result.allowed, rateLimitHeaders(logins, result)];
}

// [status, headers] of GET /login?account=...&password=...
async function login(query, address) {
  const account = query.get("account") || "";
  const password = query.get("password") || "";
  let [blocked, headers] = await loginLimit(account, address, false);
  if (blocked) {
    return [429, headers];
  }
  if (PASSWORDS[account] === password) {
    return [200, {}];
  }
  [blocked, headers] = await loginLimit(account, address, true);
  return [blocked ? 429 : 401, headers];
}

// The upstream work failed with this 5xx status.
class UpstreamError extends Error {
  constructor(status) {
    super(`upstream failed with ${status}`);
    this.status = status;
  }
}

// The work behind the limiter (simulated): GET /fail fails with a 502.
async function upstream(path) {
  if (path === "/fail") {
    throw new UpstreamError(502);
  }
  return "ok\n";
}

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, "http://example");
  if (url.pathname === "/login") {
    const address = req.headers["x-forwarded-for"] || req.socket.remoteAddress;
    const [status, headers] = await login(url.searchParams, address);
    res.writeHead(status, headers);
    res.end(status === 200 ? "ok\n" : "denied\n");
    return;
  }
  const clientId = req.headers["x-client-id"] || req.socket.remoteAddress;
  let [blocked, headers] = await rateLimit(clientId);
  let status = 429;
  let body = "too many requests\n";
  if (!blocked) {
    try {
      body = await upstream(req.url);
      status = 200;
    } catch (failure) {
      if (!(failure instanceof UpstreamError)) throw failure;
      // The work was not done, so the client does not pay for it: give its
      // unit back. Refund only what this request took: nothing ties a refund
      // to the request, so refunding units never taken would hand out free
      // ones.
      [, headers] = await rateLimit(clientId, true);
      status = failure.status;
      body = "bad gateway\n";
    }
  }
  res.writeHead(status, headers);
  res.end(body);
});

function get(url, headers = { "X-Client-Id": "example-node" }) {
  return new Promise((resolve, reject) => {
    http.get(url, { headers }, (res) => {
      res.resume();
      res.on("end", () => resolve(res));
    }).on("error", reject);
  });
}

server.listen(0, "127.0.0.1", async () => {
  const url = `http://127.0.0.1:${server.address().port}`;
  const paths = ["/", "/fail", "/", "/", "/"];
  for (let i = 0; i < paths.length; i++) {
    const res = await get(url + paths[i]);
    if (i === 0) {
      console.log(`RateLimit-Policy: ${res.headers["ratelimit-policy"]}`);
    }
    const shown = ["RateLimit", "Retry-After"]
      .filter((n) => res.headers[n.toLowerCase()] !== undefined)
      .map((n) => `${n}: ${res.headers[n.toLowerCase()]}`)
      .join(" ");
    // A 502: the upstream work failed and the handler refunded the unit.
    const refunded = res.statusCode === 502 ? " (unit refunded)" : "";
    console.log(`${res.statusCode} ${shown}${refunded}`);
  }
  // Six wrong passwords, then the right one: locked out all the same. The
  // account (one per example) and the address (as a proxy would pass it)
  // are this example's own.
  for (const password of [...Array(6).fill("guess"), "correct horse"]) {
    const query = new URLSearchParams({ account: "alice-node", password });
    const res = await get(`${url}/login?${query}`, { "X-Forwarded-For": "203.0.113.2" });
    const shown = ["RateLimit", "Retry-After"]
      .filter((n) => res.headers[n.toLowerCase()] !== undefined)
      .map((n) => `${n}: ${res.headers[n.toLowerCase()]}`)
      .join(" ");
    const which = password === "guess" ? "wrong" : "right";
    console.log(`login (${which} password): ${res.statusCode} ${shown}`);
  }
  server.close();
  redis.disconnect();
});
