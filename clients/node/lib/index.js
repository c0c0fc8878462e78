"use strict";

const { RateLimits, VERSION } = require("./client");
const { Result, Limiter, AllOf, Concurrency, Lease } = require("./limiters");
const { RateLimitError, InvalidParameter, ServerError, Unavailable, LeaseRefusedError } = require("./errors");
const { rateLimit, rateLimitHeaders, policyHeader } = require("./middleware");
const { toMs } = require("./duration");
const { PrometheusMetrics, TopRefused } = require("./metrics");
const { RateLimitStore } = require("./express-store");
const { FlexibleLimiter } = require("./flexible");

module.exports = {
  RateLimits,
  VERSION,
  Result,
  Limiter,
  AllOf,
  Concurrency,
  Lease,
  RateLimitError,
  InvalidParameter,
  ServerError,
  Unavailable,
  LeaseRefusedError,
  rateLimit,
  rateLimitHeaders,
  policyHeader,
  toMs,
  PrometheusMetrics,
  TopRefused,
  RateLimitStore,
  FlexibleLimiter,
};
