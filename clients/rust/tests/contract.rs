//! The clients' contract (clients/contract/*.json): every case that applies
//! to Rust, through the client's real code (the blocking and the async
//! client, and the tower layer), read from the JSON at run time, so that a
//! case added there is a test here with no code change.
//!
//! Offline, a fake Redis (tests/common/fake.rs) answers each case's
//! scripted replies over a real connection and records what the client
//! sent. The cases marked `fresh` also run against real servers: the
//! module, the functions library, the scripts.

mod common;

use std::time::{Duration, Instant};

use common::fake::{Answer, Fake, Resp, Step};
use common::{contract, Kind, Server};
use redis_ratelimit_client::{
    aio, library_source, scripts_from_library, Acquisition, ConcurrencyLimit, Decision, Error, Inspection,
    Limit, LogEntry, RateLimits, TagUnits, Take, VERSION,
};
use serde_json::{json, Value as Json};

fn cases<'a>(doc: &'a Json, field: &str) -> &'a Vec<Json> {
    doc[field].as_array().unwrap_or_else(|| panic!("no {field}"))
}

/// Whether a case applies to Rust (`"languages"` absent, or naming it).
fn for_rust(case: &Json) -> bool {
    case.get("languages")
        .and_then(Json::as_array)
        .is_none_or(|l| l.iter().any(|v| v == "rust"))
}

fn name(case: &Json) -> &str {
    case["name"].as_str().unwrap_or("?")
}

/// Milliseconds of the contract, possibly fractional, as a Duration.
fn ms(v: &Json) -> Duration {
    let ms = v.as_f64().unwrap_or_else(|| panic!("not milliseconds: {v}"));
    Duration::from_nanos((ms * 1e6).round() as u64)
}

fn int(v: &Json) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// A limiter of the contract, in Rust's words.
enum Spec {
    One(Limit),
    All(Vec<Limit>),
    Concurrency(ConcurrencyLimit),
    /// No limiter: a reading of the client's (log, inspect).
    Reading,
}

fn limit_of(j: &Json) -> Result<Limit, Error> {
    match j["kind"].as_str().unwrap() {
        "gcra" => match j.get("burst") {
            Some(burst) => Limit::gcra_with_burst(int(&j["rate"]), ms(&j["per_ms"]), int(burst)),
            None => Limit::gcra(int(&j["rate"]), ms(&j["per_ms"])),
        },
        "token_bucket" => Limit::token_bucket(int(&j["capacity"]), int(&j["refill"]), ms(&j["per_ms"])),
        "fixed_window" => Limit::fixed_window(int(&j["limit"]), ms(&j["window_ms"])),
        "sliding_log" => Limit::sliding_log(int(&j["limit"]), ms(&j["window_ms"])),
        "sliding_counter" => Limit::sliding_counter(int(&j["limit"]), ms(&j["window_ms"])),
        other => panic!("not a rate limiter: {other}"),
    }
}

fn spec_of(j: &Json) -> Result<Spec, Error> {
    if j.is_null() {
        return Ok(Spec::Reading);
    }
    Ok(match j["kind"].as_str().unwrap() {
        "all_of" => Spec::All(
            j["limiters"]
                .as_array()
                .unwrap()
                .iter()
                .map(limit_of)
                .collect::<Result<_, _>>()?,
        ),
        "concurrency" => Spec::Concurrency(ConcurrencyLimit::new(int(&j["limit"]), ms(&j["timeout_ms"]))?),
        _ => Spec::One(limit_of(j)?),
    })
}

/// What a call answers.
#[derive(Debug)]
enum Outcome {
    Decision(Decision, Option<u64>),
    Units(u64),
    Renewed(bool),
    Checked,
    Entries(Vec<LogEntry>),
    Totals(Vec<TagUnits>),
    Inspected(Option<Inspection>),
}

fn opt(call: &Json, name: &str) -> bool {
    call["options"].get(name).and_then(Json::as_bool).unwrap_or(false)
}

/// The options of a `take` or `refund` call.
fn take_of(call: &Json) -> Take {
    let n = call.get("n").map_or(1, int);
    let options = &call["options"];
    let mut take = Take::n(n);
    if call["op"] == "refund" {
        take = take.refund();
    }
    if opt(call, "peek") {
        take = take.peek();
    }
    if opt(call, "force") {
        take = take.force();
    }
    if let Some(wait) = options.get("wait_ms") {
        take = take.wait(ms(wait));
    }
    if opt(call, "at_most") {
        take = take.at_most();
    }
    if let Some(block) = options.get("block_ms") {
        take = take.block(ms(block));
    }
    if let Some(tag) = options.get("tag") {
        take = take.tag(tag.as_str().unwrap());
    }
    take
}

fn keys_of(call: &Json) -> Vec<String> {
    call["keys"]
        .as_array()
        .map(|k| k.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

/// Make `call` on a client: the same code for the blocking client and the
/// async one (`.await` after each call).
macro_rules! perform {
    ($limits:expr, $spec:expr, $call:expr $(, $aw:tt)?) => {{
        let (limits, spec, call) = (&$limits, $spec, $call);
        let keys = keys_of(call);
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let op = call["op"].as_str().unwrap();
        let decision = |d: Decision| Outcome::Decision(d, None);
        match (op, spec) {
            ("check", Spec::One(l)) => limits.limiter(*l).check()$(.$aw)?.map(|()| Outcome::Checked),
            ("check", Spec::All(all)) => limits.all_of(all)?.check()$(.$aw)?.map(|()| Outcome::Checked),
            ("check", Spec::Concurrency(c)) => limits.concurrency(*c).check()$(.$aw)?.map(|()| Outcome::Checked),
            (_, Spec::One(l)) => limits.limiter(*l).call(keys[0], take_of(call))$(.$aw)?.map(decision),
            (_, Spec::All(all)) => limits.all_of(all)?.call(&keys, take_of(call))$(.$aw)?.map(decision),
            ("acquire", Spec::Concurrency(c)) => {
                let n = call.get("n").map_or(1, int);
                let jobs = limits.concurrency(*c);
                if opt(call, "peek") {
                    jobs.peek(keys[0], n)$(.$aw)?.map(decision)
                } else {
                    jobs.acquire_n(keys[0], n)$(.$aw)?.map(|a| match a {
                        // Kept: releasing it would send a command the case does not.
                        Acquisition::Granted(lease) => {
                            let d = *lease.decision();
                            let id = lease.forget();
                            Outcome::Decision(d, (id > 0).then_some(id))
                        }
                        Acquisition::Refused(d) => Outcome::Decision(d, None),
                    })
                }
            }
            ("release", Spec::Concurrency(c)) => limits
                .concurrency(*c)
                .release(keys[0], int(&call["lease"]))$(.$aw)?
                .map(Outcome::Units),
            ("renew", Spec::Concurrency(c)) => limits
                .concurrency(*c)
                .renew(keys[0], int(&call["lease"]), ms(&call["timeout_ms"]))$(.$aw)?
                .map(Outcome::Renewed),
            ("log", Spec::Reading) => {
                let window = ms(&call["window_ms"]);
                let count = call["options"].get("count").map(int);
                if opt(call, "by_tag") {
                    limits.log_by_tag(keys[0], window, count)$(.$aw)?.map(Outcome::Totals)
                } else {
                    limits.log(keys[0], window, count)$(.$aw)?.map(Outcome::Entries)
                }
            }
            ("inspect", Spec::Reading) => limits.inspect(keys[0])$(.$aw)?.map(Outcome::Inspected),
            (op, _) => panic!("no such call: {op}"),
        }
    }};
}

/// A tag in the contract's words: its bytes as a string, or null.
fn tag_json(tag: &Option<Vec<u8>>) -> Json {
    tag.as_ref()
        .map_or(Json::Null, |t| json!(String::from_utf8_lossy(t)))
}

/// An inspection in the contract's words: its fields by name.
fn inspection_json(inspection: &Option<Inspection>) -> Json {
    let Some(i) = inspection else { return Json::Null };
    let mut fields = serde_json::Map::new();
    fields.insert("kind".into(), i.kind().map_or(Json::Null, |k| json!(k)));
    for (name, value) in i.fields() {
        fields.insert(name.into(), value.map_or(Json::Null, |v| json!(v)));
    }
    Json::Object(fields)
}

fn perform_sync<C: redis_ratelimit_client::Connector>(
    limits: &RateLimits<C>,
    spec: &Spec,
    call: &Json,
) -> Result<Outcome, Error> {
    perform!(limits, spec, call)
}

async fn perform_async<C: redis_ratelimit_client::AsyncConnector>(
    limits: &aio::RateLimits<C>,
    spec: &Spec,
    call: &Json,
) -> Result<Outcome, Error> {
    perform!(limits, spec, call, await)
}

/// A decision in the contract's words, with the fields `expected` names.
fn decision_json(d: &Decision, lease: Option<u64>, expected: &Json) -> Json {
    let mut actual = json!({
        "allowed": d.allowed,
        "limit": d.limit,
        "remaining": d.remaining,
        "retry_after_ms": d.retry_after.map(|r| r.as_millis() as u64),
        "reset_ms": d.reset.as_millis() as u64,
        "granted": d.granted,
        "binding": d.binding,
        "failed_open": d.failed_open,
    });
    if expected.get("lease").is_some() {
        actual["lease"] = json!(lease);
    }
    actual
}

/// `outcome` against the case's `decision` or `result`.
fn check_outcome(case: &Json, outcome: &Outcome) -> Result<(), String> {
    let (actual, expected) = match outcome {
        Outcome::Decision(d, lease) => (
            decision_json(d, *lease, &case["decision"]),
            case["decision"].clone(),
        ),
        Outcome::Units(n) => (json!(n), case["result"].clone()),
        Outcome::Renewed(b) => (json!(b), case["result"].clone()),
        Outcome::Checked => (Json::Null, case["result"].clone()),
        Outcome::Entries(entries) => (
            entries
                .iter()
                .map(|e| json!({"instant_us": e.instant_us, "units": e.units, "tag": tag_json(&e.tag)}))
                .collect(),
            case["result"].clone(),
        ),
        Outcome::Totals(totals) => (
            totals
                .iter()
                .map(|e| json!({"tag": tag_json(&e.tag), "units": e.units}))
                .collect(),
            case["result"].clone(),
        ),
        Outcome::Inspected(i) => (inspection_json(i), case["result"].clone()),
    };
    if actual == expected {
        Ok(())
    } else {
        Err(format!("answered {actual}, expected {expected}"))
    }
}

/// The sources a placeholder stands for.
fn substitute(arg: &str) -> String {
    // A function's script, derived from the library as the client derives it.
    let packaged = |name: &str| {
        scripts_from_library(library_source())
            .unwrap()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no script for {name}"))
            .1
    };
    if arg == "<library>" {
        library_source().to_string()
    } else if arg == "<version>" {
        VERSION.to_string()
    } else if let Some(name) = arg.strip_prefix("<sha:").and_then(|r| r.strip_suffix('>')) {
        redis::Script::new(&packaged(name)).get_hash().to_string()
    } else if let Some(name) = arg.strip_prefix("<script:").and_then(|r| r.strip_suffix('>')) {
        packaged(name)
    } else {
        arg.to_string()
    }
}

fn command(v: &Json) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a command: {v}"))
        .iter()
        .map(|a| substitute(a.as_str().unwrap()))
        .collect()
}

fn reply(v: &Json) -> Resp {
    match v {
        Json::String(s) => Resp::Bulk(substitute(s)),
        other => Resp::from_json(other),
    }
}

const UNKNOWN_RL: &str = "ERR unknown command 'RL.GCRA', with args beginning with: ";

/// What a server of `backend` answers to the search.
fn search(backend: &str) -> Vec<Step> {
    let module = |answer| Step::new(&["RL.GCRA"], answer);
    let version = |answer| Step::new(&["FCALL", "rl_version", "0"], answer);
    match backend {
        "module" => vec![module(Answer::Error(
            "ERR wrong number of arguments for 'rl.gcra' command".into(),
        ))],
        "functions" => vec![
            module(Answer::Error(UNKNOWN_RL.into())),
            version(Answer::Reply(Resp::Bulk(VERSION.into()))),
        ],
        "scripts" => vec![
            module(Answer::Error(UNKNOWN_RL.into())),
            version(Answer::Error(
                "ERR unknown command 'FCALL', with args beginning with: 'rl_version' '0' ".into(),
            )),
        ],
        other => panic!("no backend {other}"),
    }
}

const BACKENDS: [&str; 3] = ["module", "functions", "scripts"];

/// The script a case's call meets on `backend`: the search, then its
/// command and reply.
fn script(case: &Json, backend: &str) -> Vec<Step> {
    let mut steps = search(backend);
    steps.push(Step {
        send: command(&case[backend]),
        answer: Answer::Reply(reply(&case["reply"])),
    });
    steps
}

/// What the fake received, against what the script expected.
fn check_sent(fake: &Fake, steps: &[Step]) -> Result<(), String> {
    let expected: Vec<Vec<String>> = steps.iter().map(|s| s.send.clone()).collect();
    let received = fake.received();
    if received == expected {
        Ok(())
    } else {
        Err(format!("sent {received:?}, expected {expected:?}"))
    }
}

/// Every failure, named, at once.
fn report(failures: Vec<String>, ran: usize) {
    eprintln!("{ran} cases");
    assert!(ran > 0, "no case ran");
    assert!(
        failures.is_empty(),
        "{} of {ran} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn sync_client(fake: &Fake) -> RateLimits<redis::Client> {
    RateLimits::new(fake.client())
}

fn async_client(fake: &Fake) -> aio::RateLimits<redis::Client> {
    aio::RateLimits::new(fake.client())
}

#[test]
fn calls_on_every_backend_offline() {
    let doc = contract("calls.json");
    let rt = runtime();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "cases").iter().filter(|c| for_rust(c)) {
        let spec = spec_of(&case["limiter"]).unwrap();
        for backend in BACKENDS {
            for client in ["blocking", "async"] {
                ran += 1;
                let steps = script(case, backend);
                let fake = Fake::start(steps.clone());
                // A RESP3 reply: over a connection that speaks RESP3.
                let connect = || match case.get("resp").and_then(Json::as_u64) {
                    Some(3) => fake.client_resp3(),
                    _ => fake.client(),
                };
                let outcome = match client {
                    "blocking" => perform_sync(&RateLimits::new(connect()), &spec, &case["call"]),
                    _ => rt.block_on(perform_async(
                        &aio::RateLimits::new(connect()),
                        &spec,
                        &case["call"],
                    )),
                };
                let result = outcome
                    .map_err(|e| format!("raised {e:?}"))
                    .and_then(|o| check_outcome(case, &o))
                    .and_then(|()| check_sent(&fake, &steps));
                if let Err(e) = result {
                    failures.push(format!("{} ({backend}, {client}): {e}", name(case)));
                }
            }
        }
    }
    report(failures, ran);
}

/// The reply's integers, `ignore`d positions aside.
fn compare_raw(actual: &[i64], expected: &Json, ignore: &[usize]) -> Result<(), String> {
    let expected: Vec<i64> = expected
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let keep = |v: &[i64]| -> Vec<Option<i64>> {
        v.iter()
            .enumerate()
            .map(|(i, &x)| (!ignore.contains(&i)).then_some(x))
            .collect()
    };
    if keep(actual) == keep(&expected) {
        Ok(())
    } else {
        Err(format!(
            "replied {actual:?}, expected {expected:?} (ignoring {ignore:?})"
        ))
    }
}

/// A fresh case's call against a real server: the reply as the case says.
fn check_fresh(case: &Json, outcome: &Outcome) -> Result<(), String> {
    let ignore: Vec<usize> = case
        .get("fresh_ignore")
        .and_then(Json::as_array)
        .map(|v| v.iter().map(|i| i.as_u64().unwrap() as usize).collect())
        .unwrap_or_default();
    match outcome {
        Outcome::Decision(d, lease) => {
            compare_raw(d.raw(), &case["reply"], &ignore)?;
            // The lease is the sixth integer: the clock, when ignored.
            let lease = if ignore.contains(&5) {
                case["decision"]["lease"].as_u64()
            } else {
                *lease
            };
            check_outcome(case, &Outcome::Decision(*d, lease))
        }
        other => check_outcome(case, other),
    }
}

#[test]
fn fresh_calls_against_real_servers() {
    let doc = contract("calls.json");
    let rt = runtime();
    let fresh: Vec<&Json> = cases(&doc, "cases")
        .iter()
        .filter(|c| for_rust(c) && c["fresh"] == true)
        .collect();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for (backend, kind) in [
        ("module", Kind::Module),
        ("functions", Kind::Functions),
        ("scripts", Kind::EvalOnly),
    ] {
        let server = Server::start(kind);
        let mut admin = server.client();
        let client = redis::Client::open(server.url()).unwrap();
        let blocking = RateLimits::new(client.clone());
        let non_blocking = aio::RateLimits::new(client);
        for case in &fresh {
            let spec = spec_of(&case["limiter"]).unwrap();
            for which in ["blocking", "async"] {
                ran += 1;
                let () = redis::cmd("FLUSHALL").query(&mut admin).unwrap();
                let outcome = match which {
                    "blocking" => perform_sync(&blocking, &spec, &case["call"]),
                    _ => rt.block_on(perform_async(&non_blocking, &spec, &case["call"])),
                };
                if let Err(e) = outcome
                    .map_err(|e| format!("raised {e:?}"))
                    .and_then(|o| check_fresh(case, &o))
                {
                    failures.push(format!("{} ({backend}, {which}): {e}", name(case)));
                }
            }
        }
        assert_eq!(
            format!("{:?}", blocking.backend().unwrap()).to_lowercase(),
            backend,
            "the backend of the {backend} server"
        );
    }
    report(failures, ran);
}

/// A gcra take of one unit on `k` against a module, answered `answer`.
fn take_answered(answer: Answer) -> Vec<Step> {
    let mut steps = search("module");
    steps.push(Step::new(
        &["RL.GCRA", "k", "19", "10", "1000", "1", "MS"],
        answer,
    ));
    steps
}

fn gcra() -> Limit {
    Limit::gcra_with_burst(10, Duration::from_secs(1), 20).unwrap()
}

/// The class of an error and its words: `(class, code, message)`.
fn class(e: &Error) -> (&'static str, Option<String>, String) {
    let class = match e {
        Error::InvalidParameter { .. } => "InvalidParameter",
        Error::ServerError { .. } => "ServerError",
        Error::Unavailable { .. } => "Unavailable",
        _ => "other",
    };
    (class, e.code().map(str::to_string), e.to_string())
}

#[test]
fn server_errors_are_classified() {
    let doc = contract("errors.json");
    let prefix = doc["unavailable_prefix"].as_str().unwrap();
    let rt = runtime();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "server_errors") {
        let reply_error = case["reply_error"].as_str().unwrap();
        let raises = case["raises"].as_str().unwrap();
        let message = match raises {
            "Unavailable" => format!("{prefix}{reply_error}"),
            _ => reply_error.to_string(),
        };
        let expected = (raises, case["code"].as_str().map(str::to_string), message);
        for fail_open in [false, true] {
            for client in ["blocking", "async"] {
                ran += 1;
                let steps = take_answered(Answer::Error(reply_error.to_string()));
                let fake = Fake::start(steps.clone());
                let outcome = match client {
                    "blocking" => sync_client(&fake).fail_open(fail_open).limiter(gcra()).take("k"),
                    _ => rt.block_on(async_client(&fake).fail_open(fail_open).limiter(gcra()).take("k")),
                };
                // Failing open, an outage is an allowed decision; a
                // server's refusal is raised all the same.
                let result = match (outcome, fail_open && raises == "Unavailable") {
                    (Ok(d), true) if d.allowed && d.failed_open => Ok(()),
                    (Err(e), false) if class(&e) == (expected.0, expected.1.clone(), expected.2.clone()) => {
                        Ok(())
                    }
                    (other, _) => Err(format!("answered {other:?}, expected {expected:?}")),
                }
                .and_then(|()| check_sent(&fake, &steps));
                if let Err(e) = result {
                    failures.push(format!("{reply_error} (fail_open {fail_open}, {client}): {e}"));
                }
            }
        }
    }
    report(failures, ran);
}

const TIMEOUT: Duration = Duration::from_millis(100);

/// The contract's words for the deadline, at [`TIMEOUT`].
fn deadline_message(doc: &Json) -> String {
    doc["deadline_message"]
        .as_str()
        .unwrap()
        .replace("{timeout}", &TIMEOUT.as_millis().to_string())
}

#[test]
fn transport_faults_are_unavailable() {
    let doc = contract("errors.json");
    let prefix = doc["unavailable_prefix"].as_str().unwrap();
    let rt = runtime();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "transport") {
        let fault = case["fault"].as_str().unwrap();
        let answer = match case["kind"].as_str().unwrap() {
            "no_answer" => Some(Answer::Silent),
            "closed" => Some(Answer::Close),
            "refused" => None,
            other => panic!("a fault this test knows: {other} ({fault})"),
        };
        for client in ["blocking", "async"] {
            ran += 1;
            let steps = answer.clone().map(take_answered).unwrap_or_default();
            let fake = Fake::start(steps.clone());
            let url = match answer {
                Some(_) => fake.url(),
                // Nothing listens there.
                None => {
                    let port = std::net::TcpListener::bind("127.0.0.1:0")
                        .unwrap()
                        .local_addr()
                        .unwrap()
                        .port();
                    format!("redis://127.0.0.1:{port}/")
                }
            };
            let redis = redis::Client::open(url).unwrap();
            let start = Instant::now();
            let outcome = match client {
                "blocking" => RateLimits::new(redis)
                    .timeout(TIMEOUT)
                    .unwrap()
                    .limiter(gcra())
                    .take("k"),
                _ => rt.block_on(
                    aio::RateLimits::new(redis)
                        .timeout(TIMEOUT)
                        .unwrap()
                        .limiter(gcra())
                        .take("k"),
                ),
            };
            let elapsed = start.elapsed();
            let result = match &outcome {
                Err(e @ Error::Unavailable { .. }) => {
                    let text = e.to_string();
                    match (
                        case.get("message").and_then(Json::as_str),
                        case.get("message_prefix"),
                    ) {
                        (Some(_), _) if text != deadline_message(&doc) => {
                            Err(format!("said {text:?}, expected {:?}", deadline_message(&doc)))
                        }
                        (None, Some(_)) if !text.starts_with(prefix) => Err(format!("said {text:?}")),
                        _ => Ok(()),
                    }
                }
                other => Err(format!("answered {other:?}")),
            }
            .and_then(|()| {
                if elapsed <= TIMEOUT + Duration::from_millis(50) {
                    Ok(())
                } else {
                    Err(format!("took {elapsed:?}"))
                }
            })
            .and_then(|()| check_sent(&fake, &steps));
            if let Err(e) = result {
                failures.push(format!("{fault} ({client}): {e}"));
            }
        }
    }
    report(failures, ran);
}

#[test]
fn invalid_parameters_are_refused_before_sending() {
    let doc = contract("errors.json");
    let rt = runtime();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "invalid").iter().filter(|c| for_rust(c)) {
        ran += 1;
        let fake = Fake::start(vec![]);
        let limiter = &case["limiter"];
        // Limits have no names in Rust: a name is the layer's.
        let outcome = match limiter.get("name").and_then(Json::as_str) {
            Some(policy) => limit_of(limiter).and_then(|l| {
                redis_ratelimit_client::layer::RateLimitLayer::new(async_client(&fake), policy, l).map(drop)
            }),
            None => spec_of(limiter).and_then(|spec| {
                if case["call"].is_null() {
                    // Built only: an all_of needs its client.
                    return match &spec {
                        Spec::All(all) => sync_client(&fake).all_of(all).map(drop),
                        _ => Ok(()),
                    };
                }
                let blocking = perform_sync(&sync_client(&fake), &spec, &case["call"]).map(drop);
                let non_blocking = rt
                    .block_on(perform_async(&async_client(&fake), &spec, &case["call"]))
                    .map(drop);
                match (blocking, non_blocking) {
                    (Err(a), Err(b)) if a.to_string() == b.to_string() => Err(a),
                    (a, b) => panic!("{}: blocking {a:?}, async {b:?}", name(case)),
                }
            }),
        };
        let expected = (
            "InvalidParameter",
            None,
            case["message"].as_str().unwrap().to_string(),
        );
        match outcome {
            Err(e) if class(&e) == expected && fake.connections() == 0 => {}
            other => failures.push(format!(
                "{}: answered {other:?} after {} connections, expected {expected:?}",
                name(case),
                fake.connections()
            )),
        }
    }
    report(failures, ran);
}

/// Try one parameter at `n` (a count) or `d` (a duration): the error, if
/// refused; a call's parameter accepted must also be sent as given.
fn try_param(place: &str, param: &str, n: u64, d: Duration) -> Result<Result<(), Error>, String> {
    let s = Duration::from_secs(1);
    let hour = Duration::from_secs(3600);
    let built = match (place, param) {
        ("gcra", "rate") => Some(Limit::gcra_with_burst(n, s, 10).map(drop)),
        ("gcra", "per") => Some(Limit::gcra_with_burst(10, d, 10).map(drop)),
        ("gcra", "burst") => Some(Limit::gcra_with_burst(10, s, n).map(drop)),
        ("token_bucket", "capacity") => Some(Limit::token_bucket(n, 1, s).map(drop)),
        ("token_bucket", "refill") => Some(Limit::token_bucket(10, n, s).map(drop)),
        ("token_bucket", "per") => Some(Limit::token_bucket(10, 1, d).map(drop)),
        ("fixed_window", "limit") => Some(Limit::fixed_window(n, s).map(drop)),
        ("fixed_window", "window") => Some(Limit::fixed_window(10, d).map(drop)),
        ("sliding_log", "limit") => Some(Limit::sliding_log(n, s).map(drop)),
        ("sliding_log", "window") => Some(Limit::sliding_log(10, d).map(drop)),
        ("sliding_counter", "limit") => Some(Limit::sliding_counter(n, s).map(drop)),
        ("sliding_counter", "window") => Some(Limit::sliding_counter(10, d).map(drop)),
        ("concurrency", "limit") => Some(ConcurrencyLimit::new(n, hour).map(drop)),
        ("concurrency", "timeout") => Some(ConcurrencyLimit::new(2, d).map(drop)),
        ("client", "timeout") => Some(
            RateLimits::new(redis::Client::open("redis://127.0.0.1/").unwrap())
                .timeout(d)
                .map(drop),
        ),
        ("client", "local_refusals") => Some(
            RateLimits::new(redis::Client::open("redis://127.0.0.1/").unwrap())
                .local_refusals(n)
                .map(drop),
        ),
        _ => None,
    };
    if let Some(built) = built {
        return Ok(built);
    }
    // A call's parameter: the command it sends, and its reply.
    let ms = d.as_millis().to_string();
    let gcra_cmd = |tail: &[&str]| {
        let mut c = vec!["RL.GCRA", "k", "9", "10", "1000"];
        c.extend_from_slice(tail);
        c.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let n_text = n.to_string();
    let rate_reply = Resp::Array([0, 10, 10, -1, 0].iter().map(|&i| Resp::Int(i)).collect());
    let (sent, answer) = match (place, param) {
        ("take", "n") => (gcra_cmd(&[&n_text, "MS"]), rate_reply),
        ("take", "wait") => (gcra_cmd(&["1", "MS", "WAIT", &ms]), rate_reply),
        ("take", "block") => (gcra_cmd(&["1", "MS", "BLOCK", &ms]), rate_reply),
        ("take", "tag") => (gcra_cmd(&["1", "MS", "TAG", &"x".repeat(n as usize)]), rate_reply),
        ("log", "window") => (
            ["RL.LOG", "k", &ms, "MS"].map(String::from).to_vec(),
            Resp::Array(vec![]),
        ),
        ("log", "count") => (
            ["RL.LOG", "k", "60000", "MS", "COUNT", &n_text]
                .map(String::from)
                .to_vec(),
            Resp::Array(vec![]),
        ),
        ("acquire", "n") => (
            ["RL.CONCURRENCY", "k", "2", "3600000", &n_text, "MS"]
                .map(String::from)
                .to_vec(),
            Resp::Array(
                [1, 2, 0, 1000, 3600000, 0]
                    .iter()
                    .map(|&i| Resp::Int(i))
                    .collect(),
            ),
        ),
        ("release", "lease") => (
            ["RL.RELEASE", "k", &n_text].map(String::from).to_vec(),
            Resp::Int(0),
        ),
        ("renew", "timeout") => (
            ["RL.RENEW", "k", "1", &ms, "MS"].map(String::from).to_vec(),
            Resp::Int(0),
        ),
        other => return Err(format!("a parameter this test does not know: {other:?}")),
    };
    let mut steps = search("module");
    steps.push(Step {
        send: sent,
        answer: Answer::Reply(answer),
    });
    let fake = Fake::start(steps.clone());
    let limits = sync_client(&fake);
    let limiter = limits.limiter(Limit::gcra_with_burst(10, s, 10).unwrap());
    let jobs = limits.concurrency(ConcurrencyLimit::new(2, hour).unwrap());
    let outcome = match (place, param) {
        ("take", "n") => limiter.take_n("k", n).map(drop),
        ("take", "wait") => limiter.wait("k", d).map(drop),
        ("take", "block") => limiter.call("k", Take::one().block(d)).map(drop),
        ("take", "tag") => limiter
            .call("k", Take::one().tag("x".repeat(n as usize)))
            .map(drop),
        ("log", "window") => limits.log("k", d, None).map(drop),
        ("log", "count") => limits.log("k", Duration::from_secs(60), Some(n)).map(drop),
        ("acquire", "n") => jobs.acquire_n("k", n).map(drop),
        ("release", "lease") => jobs.release("k", n).map(drop),
        _ => jobs.renew("k", 1, d).map(drop),
    };
    match &outcome {
        Ok(()) => check_sent(&fake, &steps)?,
        Err(_) if fake.connections() > 0 => return Err("sent something".to_string()),
        Err(_) => {}
    }
    Ok(outcome)
}

fn words(template: &str, fields: &[(&str, String)]) -> String {
    fields.iter().fold(template.to_string(), |t, (k, v)| {
        t.replace(&format!("{{{k}}}"), v)
    })
}

#[test]
fn every_range_with_its_words() {
    let doc = contract("ranges.json");
    let messages = &doc["messages"];
    let (mut failures, mut ran) = (Vec::new(), 0);
    for p in cases(&doc, "params") {
        let (place, param) = (p["where"].as_str().unwrap(), p["name"].as_str().unwrap());
        let (min, max) = (int(&p["min"]), int(&p["max"]));
        let kind = p["kind"].as_str().unwrap();
        // Below a minimum of 0 is a negative number, which no Rust
        // parameter (u64, Duration) can hold.
        let mut values = vec![(min, true), (max, true), (max + 1, false)];
        if min > 0 {
            values.push((min - 1, false));
        }
        for (value, accepted) in values {
            ran += 1;
            let outcome = try_param(place, param, value, Duration::from_millis(value));
            let expected = words(
                messages[kind].as_str().unwrap(),
                &[
                    ("name", param.to_string()),
                    ("min", min.to_string()),
                    ("max", max.to_string()),
                    ("value", value.to_string()),
                ],
            );
            let result = match outcome {
                Err(e) => Err(e),
                Ok(Ok(())) if accepted => Ok(()),
                Ok(Err(e)) if !accepted && class(&e) == ("InvalidParameter", None, expected.clone()) => {
                    Ok(())
                }
                Ok(other) => Err(format!("answered {other:?}")),
            };
            if let Err(e) = result {
                failures.push(format!("{place} {param} = {value}: {e}"));
            }
        }
    }
    for case in cases(&doc, "whole_ms") {
        ran += 1;
        let (place, param) = (case["where"].as_str().unwrap(), case["name"].as_str().unwrap());
        let expected = (
            "InvalidParameter",
            None,
            case["message"].as_str().unwrap().to_string(),
        );
        match try_param(place, param, 1, ms(&case["value_ms"])) {
            Ok(Err(e)) if class(&e) == expected => {}
            other => failures.push(format!("{place} {param} = {}: {other:?}", case["value_ms"])),
        }
    }
    report(failures, ran);
}

/// The contract's defaults are the client's.
#[test]
fn client_defaults() {
    let doc = contract("ranges.json");
    let client = |name: &str| {
        cases(&doc, "params")
            .iter()
            .find(|p| p["where"] == "client" && p["name"] == name)
            .unwrap_or_else(|| panic!("no client {name}"))["default"]
            .as_u64()
            .unwrap()
    };
    let limits = RateLimits::new(redis::Client::open("redis://127.0.0.1/").unwrap());
    let shown = format!("{limits:?}");
    assert!(
        shown.contains(&format!(
            "timeout: {:?}",
            Duration::from_millis(client("timeout"))
        )),
        "{shown}"
    );
    assert!(shown.contains("fail_open: false"), "{shown}");
}

/// The steps of a transcript: each command and what it met.
fn transcript_steps(t: &Json) -> Vec<Step> {
    t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| Step {
            send: command(&s["send"]),
            answer: if let Some(r) = s.get("reply") {
                Answer::Reply(reply(r))
            } else if let Some(e) = s.get("error") {
                Answer::Error(e.as_str().unwrap().to_string())
            } else {
                assert_eq!(s["fault"], "closed", "a fault this test knows");
                Answer::Close
            },
        })
        .collect()
}

/// A transcript's outcome against the client's answers to its calls and
/// the backend it ended with.
fn check_transcript(
    t: &Json,
    answers: &[Result<Decision, Error>],
    backend: Option<String>,
) -> Result<(), String> {
    let outcome = &t["outcome"];
    if outcome.get("first").is_some() {
        match &answers[0] {
            Err(e) if class(e).0 == outcome["first"] => {}
            other => return Err(format!("first call: {other:?}")),
        }
    }
    let last = answers.last().unwrap();
    if let Some(reply) = outcome.get("decision_reply") {
        match last {
            Ok(d) => compare_raw(d.raw(), reply, &[])?,
            Err(e) => return Err(format!("raised {e:?}")),
        }
    } else {
        match last {
            Err(e) if class(e).0 == outcome["raises"] => {
                if let Some(message) = outcome.get("message").and_then(Json::as_str) {
                    if e.to_string() != message {
                        return Err(format!("said {e}, expected {message}"));
                    }
                }
            }
            other => return Err(format!("answered {other:?}, expected {}", outcome["raises"])),
        }
    }
    let expected = t["backend"].as_str().unwrap();
    match backend {
        Some(b) if b == expected => Ok(()),
        other => Err(format!("ended with the backend {other:?}, expected {expected}")),
    }
}

#[test]
fn backend_search_transcripts() {
    let doc = contract("backends.json");
    let rt = runtime();
    let (mut failures, mut ran) = (Vec::new(), 0);
    for t in cases(&doc, "transcripts") {
        let calls = t.get("calls").map_or(1, int);
        for client in ["blocking", "async"] {
            ran += 1;
            let steps = transcript_steps(t);
            let fake = Fake::start(steps.clone());
            let (answers, backend): (Vec<_>, _) = match client {
                "blocking" => {
                    let limits = sync_client(&fake);
                    let api = limits.limiter(gcra());
                    let answers = (0..calls).map(|_| api.take("k")).collect();
                    (answers, limits.backend())
                }
                _ => rt.block_on(async {
                    let limits = async_client(&fake);
                    let api = limits.limiter(gcra());
                    let mut answers = Vec::new();
                    for _ in 0..calls {
                        answers.push(api.take("k").await);
                    }
                    (answers, limits.backend().await)
                }),
            };
            let backend = backend.ok().map(|b| format!("{b:?}").to_lowercase());
            if let Err(e) = check_transcript(t, &answers, backend).and_then(|()| check_sent(&fake, &steps)) {
                failures.push(format!("{} ({client}): {e}", name(t)));
            }
        }
    }
    report(failures, ran);
}

type Layer = redis_ratelimit_client::layer::RateLimitLayer<redis::Client>;

/// The layer of `limiters` (each with its name) over `limits`, keyed by
/// `X-Client-Id`.
fn layer_of(limits: aio::RateLimits<redis::Client>, limiters: &Json) -> Result<Layer, Error> {
    let mut named = limiters
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["name"].as_str().unwrap(), limit_of(l).unwrap()));
    let (first, limit) = named.next().unwrap();
    let layer = Layer::new(limits, first, limit)?;
    let layer = named.try_fold(layer, |layer, (name, limit)| layer.and(name, limit))?;
    Ok(layer.key(common::http::client_id))
}

/// One request through `layer` in front of [`app_handler`].
async fn through(layer: Layer, identity: Option<&str>) -> (http::Response<axum::body::Body>, String) {
    use tower_service::Service;
    let mut app = axum::Router::new()
        .route("/", axum::routing::get(common::http::app_handler))
        .layer(layer);
    let mut request = http::Request::builder().uri("/");
    if let Some(identity) = identity {
        request = request.header("x-client-id", identity);
    }
    let request = request.body(axum::body::Body::empty()).unwrap();
    std::future::poll_fn(|cx| Service::<http::Request<axum::body::Body>>::poll_ready(&mut app, cx))
        .await
        .unwrap();
    let response = app.call(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    (
        http::Response::from_parts(parts, axum::body::Body::empty()),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

/// The keys of a command the layer sent: after the command's name (and
/// `RL.ALL`'s count).
fn keys_sent(sent: &[String], n: usize) -> Vec<String> {
    let first = if sent[0] == "RL.ALL" { 2 } else { 1 };
    sent[first..first + n].to_vec()
}

/// An allowed reply for `n` limits.
fn allowed(n: usize) -> Resp {
    let mut ints = vec![0, 10, 9, -1, 100];
    if n > 1 {
        ints.push(1);
    }
    Resp::Array(ints.into_iter().map(Resp::Int).collect())
}

#[tokio::test]
async fn middleware_keys_and_start_up_check() {
    let doc = contract("middleware.json");
    assert_eq!(
        doc["prefix_default"],
        redis_ratelimit_client::layer::DEFAULT_PREFIX
    );
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "keys") {
        ran += 1;
        let names: Vec<&str> = case["names"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap())
            .collect();
        let expected: Vec<String> = case["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_str().unwrap().to_string())
            .collect();
        let identity = case["identity"].as_str().unwrap();
        let limiters = json!(names
            .iter()
            .map(|n| json!({"kind": "gcra", "rate": 10, "per_ms": 1000, "name": n}))
            .collect::<Vec<_>>());
        // A request, then the start-up check: the keys of the identity,
        // then those of the identity "check".
        let mut steps = search("module");
        steps.push(Step::any(Answer::Reply(allowed(names.len()))));
        steps.push(Step::any(Answer::Reply(allowed(names.len()))));
        let fake = Fake::start(steps);
        let layer = layer_of(async_client(&fake), &limiters)
            .unwrap()
            .prefix(case["prefix"].as_str().unwrap());
        let shown = layer.keys(identity);
        let checked = layer.keys(doc["check_identity"].as_str().unwrap());
        let (response, _) = through(layer.clone(), Some(identity)).await;
        let check = layer.check().await;
        let received = fake.received();
        let result = if shown != expected {
            Err(format!("keys {shown:?}, expected {expected:?}"))
        } else if response.status() != 200 || check.is_err() || received.len() != 3 {
            Err(format!("{} / {check:?} / sent {received:?}", response.status()))
        } else if keys_sent(&received[1], names.len()) != expected {
            Err(format!("the request sent {:?}", received[1]))
        } else if keys_sent(&received[2], names.len()) != checked || received[2].last().unwrap() != "PEEK" {
            Err(format!(
                "the check sent {:?}, expected a PEEK on {checked:?}",
                received[2]
            ))
        } else {
            Ok(())
        };
        if let Err(e) = result {
            failures.push(format!("{identity} {names:?}: {e}"));
        }
    }
    report(failures, ran);
}

/// A response against a case's status, headers, body and marking.
fn check_response(
    case: &Json,
    response: &http::Response<axum::body::Body>,
    body: &str,
) -> Result<(), String> {
    let status = match &case["status"] {
        Json::String(app) if app == "app" => 200,
        code => code.as_u64().unwrap() as u16,
    };
    if response.status() != status {
        return Err(format!("status {}, expected {status}", response.status()));
    }
    let headers = response.headers();
    for (name, value) in case["headers"].as_object().unwrap() {
        let got = headers.get(name.as_str()).and_then(|v| v.to_str().ok());
        if got != value.as_str() {
            return Err(format!("{name}: {got:?}, expected {value}"));
        }
    }
    for name in case["absent"].as_array().unwrap() {
        if let Some(v) = headers.get(name.as_str().unwrap()) {
            return Err(format!("{name}: {v:?}, expected none"));
        }
    }
    let expected_body = match (&case["body"], status) {
        (Json::String(b), _) => Some(b.as_str()),
        (_, 200) => Some("ok\n"),
        _ => None,
    };
    if expected_body.is_some_and(|b| b != body) {
        return Err(format!("body {body:?}, expected {expected_body:?}"));
    }
    if status == 200 {
        let seen = headers.get("x-seen").and_then(|v| v.to_str().ok());
        let marked = case["marked"].as_str().unwrap_or("none");
        if seen != Some(marked) {
            return Err(format!("the app saw {seen:?}, expected {marked}"));
        }
    }
    if let Some(raised) = case.get("raised") {
        match response.extensions().get::<Error>() {
            Some(e) if class(e).0 == raised => {}
            other => return Err(format!("carried {other:?}, expected {raised}")),
        }
    }
    Ok(())
}

#[tokio::test]
async fn middleware_responses() {
    let doc = contract("middleware.json");
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "responses") {
        let fail_open = case["fail_open"].as_bool().unwrap();
        let outcome = &case["outcome"];
        let answer = if let Some(r) = outcome.get("reply") {
            Some(Answer::Reply(reply(r)))
        } else if let Some(e) = outcome.get("reply_error") {
            Some(Answer::Error(e.as_str().unwrap().to_string()))
        } else if outcome.get("unavailable").is_some() {
            Some(Answer::Silent)
        } else {
            None
        };
        let identity = match case.get("identity") {
            Some(Json::Null) => None,
            _ => Some("203.0.113.7"),
        };
        // The policy of the client, or the layer's own over the opposite.
        for own in [false, true] {
            ran += 1;
            let steps: Vec<Step> = match &answer {
                Some(answer) => {
                    let mut steps = search("module");
                    steps.push(Step::any(answer.clone()));
                    steps
                }
                None => vec![],
            };
            let fake = Fake::start(steps.clone());
            let limits = async_client(&fake)
                .timeout(TIMEOUT)
                .unwrap()
                .fail_open(fail_open != own);
            let mut layer = layer_of(limits, &case["limiters"]).unwrap();
            if own {
                layer = layer.fail_open(fail_open);
            }
            let (response, body) = through(layer, identity).await;
            let result = check_response(case, &response, &body).and_then(|()| {
                if fake.received().len() == steps.len() {
                    Ok(())
                } else {
                    Err(format!("sent {:?}", fake.received()))
                }
            });
            if let Err(e) = result {
                failures.push(format!("{} (the layer's own policy: {own}): {e}", name(case)));
            }
        }
    }
    report(failures, ran);
}

#[test]
fn middleware_refuses_two_limits_of_one_name() {
    let doc = contract("middleware.json");
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "invalid") {
        ran += 1;
        let fake = Fake::start(vec![]);
        let expected = (
            "InvalidParameter",
            None,
            case["message"].as_str().unwrap().to_string(),
        );
        match layer_of(async_client(&fake), &case["limiters"]) {
            Err(e) if class(&e) == expected => {}
            other => failures.push(format!("{}: {:?}", name(case), other.map(drop))),
        }
    }
    report(failures, ran);
}

/// A case's tag: a string, null, or `{"repeat": s, "times": n}`.
fn tag_of(tag: &Json) -> Option<Vec<u8>> {
    match tag {
        Json::Null => None,
        Json::String(s) => Some(s.clone().into_bytes()),
        repeated => Some(
            repeated["repeat"]
                .as_str()
                .unwrap()
                .repeat(int(&repeated["times"]) as usize)
                .into_bytes(),
        ),
    }
}

#[tokio::test]
async fn middleware_tags() {
    let doc = contract("middleware.json");
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "tags") {
        ran += 1;
        let mut steps = search("module");
        if let Some(r) = case.get("reply").filter(|r| !r.is_null()) {
            steps.push(Step::any(Answer::Reply(reply(r))));
        }
        if let Some(e) = case.get("reply_error") {
            steps.push(Step::any(Answer::Error(e.as_str().unwrap().to_string())));
        }
        let fake = Fake::start(steps);
        let tag = tag_of(&case["tag"]);
        let layer = layer_of(async_client(&fake), &case["limiters"])
            .and_then(|l| l.tag(move |_| tag.clone()))
            .unwrap();
        let (response, _) = through(layer, case["identity"].as_str()).await;
        let received = fake.received();
        let result = if case["status"] == "app" {
            let sent = command(&case["sent"]);
            if response.status() != 200 || received.get(1) != Some(&sent) {
                Err(format!(
                    "{}, sent {received:?}, expected {sent:?}",
                    response.status()
                ))
            } else {
                Ok(())
            }
        } else {
            let error = response.extensions().get::<Error>();
            match error {
                _ if response.status() != 500 => Err(format!("status {}", response.status())),
                Some(e) if class(e).0 != case["raised"] => Err(format!("carried {e:?}")),
                Some(e) if case.get("message").is_some_and(|m| m != &class(e).2) => {
                    Err(format!("carried {e:?}"))
                }
                None => Err("no error carried".to_string()),
                _ if case.get("sent").is_some_and(Json::is_null) && !received.is_empty() => {
                    Err(format!("sent {received:?}"))
                }
                _ => Ok(()),
            }
        };
        if let Err(e) = result {
            failures.push(format!("{}: {e}", name(case)));
        }
    }
    report(failures, ran);
}

#[test]
fn middleware_refuses_a_tag_without_a_sliding_log() {
    let doc = contract("middleware.json");
    let (mut failures, mut ran) = (Vec::new(), 0);
    for case in cases(&doc, "tag_invalid") {
        ran += 1;
        let fake = Fake::start(vec![]);
        let expected = (
            "InvalidParameter",
            None,
            case["message"].as_str().unwrap().to_string(),
        );
        match layer_of(async_client(&fake), &case["limiters"])
            .and_then(|l| l.tag(|_| Some(b"user:42".to_vec())))
        {
            Err(e) if class(&e) == expected => {}
            other => failures.push(format!("{}: {:?}", name(case), other.map(drop))),
        }
    }
    report(failures, ran);
}
