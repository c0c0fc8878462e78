"use strict";

// A RESP server on a loopback port that stands in for Redis in the
// contract's offline cases: the real Redis clients (ioredis, node-redis)
// connect to it, and a handler decides the answer of each command. What the
// clients send on their own to set a connection up (HELLO, CLIENT SETINFO,
// INFO, SELECT, ...) is answered here and kept out of the record.

const net = require("node:net");
const { before, after } = require("node:test");

/** Commands a Redis client sends by itself: on connecting, on closing, or (PING) in place of a call it gave up. */
const HANDSHAKE = new Set(["HELLO", "CLIENT", "INFO", "SELECT", "AUTH", "READONLY", "PING", "QUIT"]);

/**
 * An answer: a number (integer reply), a string (bulk), an array, null, or
 * `{error: "ERR ..."}`, `{status: "OK"}`; `NO_ANSWER` keeps silent,
 * `CLOSE` closes the connection.
 */
const NO_ANSWER = Symbol("no answer");
const CLOSE = Symbol("close");

/** `value` in RESP2, or in RESP3 where they differ (nil). @param {any} value @param {boolean} [resp3] @returns {string} */
function encode(value, resp3 = false) {
  if (value === null || value === undefined) return resp3 ? "_\r\n" : "$-1\r\n";
  if (typeof value === "number" || typeof value === "bigint") return `:${value}\r\n`;
  if (typeof value === "string") return `$${Buffer.byteLength(value)}\r\n${value}\r\n`;
  const each = (/** @type {any[]} */ values) => values.map((v) => encode(v, resp3)).join("");
  if (Array.isArray(value)) return `*${value.length}\r\n${each(value)}`;
  if (Array.isArray(value.map)) return `%${value.map.length / 2}\r\n${each(value.map)}`;
  if (Array.isArray(value.resp3_map)) return `%${value.resp3_map.length / 2}\r\n${each(value.resp3_map)}`;
  if (typeof value.error === "string") return `-${value.error}\r\n`;
  if (typeof value.status === "string") return `+${value.status}\r\n`;
  throw new Error(`fake-redis: cannot encode ${JSON.stringify(value)}`);
}

/** The handshake's answers: enough for ioredis 5/6 and node-redis 4/5/6 to call the connection ready. */
function handshake(args) {
  switch (args[0].toUpperCase()) {
    case "HELLO": {
      const fields = ["server", "redis", "version", "7.0.15", "proto", Number(args[1] ?? 2), "id", 1, "mode", "standalone", "role", "master", "modules", []];
      // RESP3 answers HELLO 3 with a map; RESP2 with a flat array.
      return args[1] === "3" ? { map: fields } : fields;
    }
    case "INFO":
      return "# Server\r\nredis_version:7.0.15\r\n# Persistence\r\nloading:0\r\n";
    case "PING":
      return { status: "PONG" };
    default:
      return { status: "OK" };
  }
}

/**
 * Parses the commands in `buffer` (RESP arrays of bulk strings); returns
 * the commands and the bytes left over (an incomplete command).
 * @param {Buffer} buffer
 * @returns {{commands: string[][], rest: Buffer}}
 */
function parse(buffer) {
  const commands = [];
  let at = 0;
  for (;;) {
    const start = at;
    const line = () => {
      const end = buffer.indexOf("\r\n", at);
      if (end < 0) return null;
      const text = buffer.toString("utf8", at, end);
      at = end + 2;
      return text;
    };
    const head = line();
    if (head === null) return { commands, rest: buffer.subarray(start) };
    if (!head.startsWith("*")) {
      commands.push(head.trim().split(/\s+/)); // an inline command
      continue;
    }
    const count = Number(head.slice(1));
    const args = [];
    let complete = true;
    for (let i = 0; i < count; i++) {
      const size = line();
      if (size === null) {
        complete = false;
        break;
      }
      const length = Number(size.slice(1));
      if (buffer.length < at + length + 2) {
        complete = false;
        break;
      }
      args.push(buffer.toString("utf8", at, at + length));
      at += length + 2;
    }
    if (!complete) return { commands, rest: buffer.subarray(start) };
    commands.push(args);
  }
}

/**
 * Starts a fake server. `handler(args, record)` answers each command that
 * is not part of a handshake; `record` holds those commands in order.
 * @param {(args: string[], record: string[][]) => any} handler
 * @returns {Promise<{port: number, record: string[][], sockets: Set<net.Socket>, close: () => Promise<void>}>}
 */
function fakeRedis(handler) {
  /** @type {string[][]} */
  const record = [];
  /** @type {Set<net.Socket>} */
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let pending = Buffer.alloc(0);
    let resp3 = false;
    socket.on("data", (data) => {
      const { commands, rest } = parse(Buffer.concat([pending, data]));
      pending = rest;
      for (const args of commands) {
        if (socket.destroyed) return;
        let answer;
        if (HANDSHAKE.has(args[0].toUpperCase())) {
          if (args[0].toUpperCase() === "HELLO" && args.length > 1) resp3 = args[1] === "3";
          answer = handshake(args);
        } else {
          record.push(args);
          answer = handler(args, record);
        }
        if (answer === NO_ANSWER) continue;
        if (answer === CLOSE) {
          socket.destroy();
          return;
        }
        socket.write(encode(answer, resp3));
      }
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: /** @type {net.AddressInfo} */ (server.address()).port,
        record,
        sockets,
        close: () =>
          new Promise((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    });
  });
}

/**
 * A fake server and a Redis client connected to it by `connect`, made
 * before the tests of the suite that calls this and closed after them;
 * `answer(fn)` sets how each command is answered and clears the record.
 * @param {(port: number) => Promise<{client: any, close: () => Promise<unknown>}>} connect
 */
function fakeConnection(connect) {
  /** @type {(args: string[]) => any} */
  let respond = () => ({ error: "ERR the test gave no answer" });
  /** @type {Awaited<ReturnType<typeof fakeRedis>>} */
  let server;
  /** @type {{client: any, close: () => Promise<unknown>}} */
  let conn;
  before(async () => {
    server = await fakeRedis((args) => respond(args));
    conn = await connect(server.port);
  });
  after(async () => {
    await conn?.close();
    await server?.close();
  });
  return {
    /** @param {(args: string[]) => any} fn */
    answer(fn) {
      respond = fn;
      server.record.length = 0;
    },
    get record() {
      return server.record;
    },
    get client() {
      return conn.client;
    },
    get port() {
      return server.port;
    },
    get sockets() {
      return server.sockets;
    },
  };
}

module.exports = { fakeRedis, fakeConnection, NO_ANSWER, CLOSE, encode };
