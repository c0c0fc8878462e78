"use strict";

// An app served over real HTTP on a free loopback port, for the tests of
// the middleware and of the adapters.

/**
 * Serves `app` (an Express app) on a free port; resolves to its base URL and a close().
 * @param {any} app
 * @returns {Promise<{url: string, close: () => Promise<unknown>}>}
 */
function serve(app) {
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

/**
 * Status, the named response headers (those present) and the body of GET url.
 * @param {string} url
 * @param {string[]} names
 * @param {Record<string, string>} [headers]
 */
async function getWith(url, names, headers = {}) {
  const res = await fetch(url, { headers });
  /** @type {Record<string, string>} */
  const shown = {};
  for (const name of names) {
    const value = res.headers.get(name);
    if (value !== null) shown[name] = value;
  }
  return { status: res.status, headers: shown, body: await res.text() };
}

module.exports = { serve, getWith };
