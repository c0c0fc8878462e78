"use strict";

const { InvalidParameter } = require("./errors");

const UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*(ms|s|m|h|d)\s*$/;

/** @param {unknown} value */
const shown = (value) => (typeof value === "number" ? String(value) : JSON.stringify(value) ?? String(value));

/**
 * Milliseconds from a number of milliseconds or a string such as "1s",
 * "500ms", "1.5m", "1h", "1d". Every call is sent with MS, so the result
 * must be a whole number of milliseconds within [min, max].
 * @param {unknown} value
 * @param {string} name the parameter, named in the error
 * @param {number} [min]
 * @param {number} [max]
 * @returns {number}
 */
function toMs(value, name, min = 1, max = 1e12) {
  let ms;
  if (typeof value === "number") {
    ms = value;
  } else if (typeof value === "string") {
    const m = PATTERN.exec(value);
    if (!m) {
      throw new InvalidParameter(
        `${name} must be milliseconds (a number) or a duration such as "500ms", "1s", "5m", "1h", "1d", got ${JSON.stringify(value)}`,
      );
    }
    // Scaled in decimal to avoid 0.1 * 1000 = 100.00000000000001.
    const [whole, frac = ""] = m[1].split(".");
    const unit = UNITS[/** @type {keyof typeof UNITS} */ (m[2])];
    ms = Number(whole || "0") * unit + (frac ? (Number(frac) * unit) / 10 ** frac.length : 0);
    ms = Math.round(ms * 1e6) / 1e6;
  } else {
    throw new InvalidParameter(`${name} must be milliseconds (a number) or a duration string such as "1s", got ${shown(value)}`);
  }
  if (!Number.isFinite(ms)) throw new InvalidParameter(`${name} must be from ${min} ms to ${max} ms, got ${ms} ms`);
  if (!Number.isInteger(ms)) throw new InvalidParameter(`${name} must be a whole number of milliseconds, got ${ms} ms`);
  if (ms < min || ms > max) throw new InvalidParameter(`${name} must be from ${min} ms to ${max} ms, got ${ms} ms`);
  return ms;
}

/**
 * An integer within [min, max], or an InvalidParameter naming the parameter.
 * @param {unknown} value
 * @param {string} name
 * @param {number} min
 * @param {number} max
 * @returns {number}
 */
function toInt(value, name, min, max) {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new InvalidParameter(`${name} must be an integer from ${min} to ${max}, got ${shown(value)}`);
  }
  return value;
}

/**
 * Refuses an options object with a key not in `known` (a misspelt option
 * would otherwise be ignored): "<where>: unknown option 'x' (expected a, b)".
 * @param {unknown} options
 * @param {string} where
 * @param {readonly string[]} known
 */
function checkOptions(options, where, known) {
  if (options === undefined || options === null) return;
  if (typeof options !== "object") throw new InvalidParameter(`${where}: options must be an object, got ${shown(options)}`);
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) throw new InvalidParameter(`${where}: unknown option '${key}' (expected ${known.join(", ")})`);
  }
}

module.exports = { toMs, toInt, checkOptions };
