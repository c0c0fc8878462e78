//! A fake Redis on a loopback port, for the contract's offline cases: it
//! reads each command a client sends (RESP), compares it with the next
//! step of its script, and answers what the step says: a reply, an error
//! reply, nothing at all, or a closed connection. The client under test
//! runs its real code, connection included; the test then compares what
//! the fake received with the script.
//!
//! `CLIENT SETINFO`, which the `redis` crate's async connection sends when
//! it connects, is answered `+OK` and not part of the script.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// A reply, as RESP encodes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Resp {
    Int(i64),
    Bulk(String),
    Array(Vec<Resp>),
    Nil,
    /// A RESP3 map, its names and values in turn.
    Map(Vec<Resp>),
}

impl Resp {
    /// In RESP2, or in RESP3 where they differ (nil).
    fn encode(&self, out: &mut Vec<u8>, resp3: bool) {
        match self {
            Resp::Int(n) => out.extend(format!(":{n}\r\n").bytes()),
            Resp::Bulk(s) => out.extend(format!("${}\r\n{s}\r\n", s.len()).bytes()),
            Resp::Array(items) => {
                out.extend(format!("*{}\r\n", items.len()).bytes());
                for item in items {
                    item.encode(out, resp3);
                }
            }
            Resp::Map(flat) => {
                out.extend(format!("%{}\r\n", flat.len() / 2).bytes());
                for item in flat {
                    item.encode(out, resp3);
                }
            }
            Resp::Nil if resp3 => out.extend(b"_\r\n"),
            Resp::Nil => out.extend(b"$-1\r\n"),
        }
    }

    /// A reply of the contract's JSON: an integer, a string, nil, an array
    /// of them, or `{"resp3_map": [name, value, ...]}`.
    pub fn from_json(v: &serde_json::Value) -> Resp {
        match v {
            serde_json::Value::Number(n) => Resp::Int(n.as_i64().expect("an integer reply")),
            serde_json::Value::String(s) => Resp::Bulk(s.clone()),
            serde_json::Value::Array(items) => Resp::Array(items.iter().map(Resp::from_json).collect()),
            serde_json::Value::Null => Resp::Nil,
            serde_json::Value::Object(o) if o.len() == 1 && o.contains_key("resp3_map") => Resp::Map(
                o["resp3_map"]
                    .as_array()
                    .expect("a map's names and values")
                    .iter()
                    .map(Resp::from_json)
                    .collect(),
            ),
            other => panic!("not a reply: {other}"),
        }
    }
}

/// What the fake answers to one command.
#[derive(Debug, Clone)]
pub enum Answer {
    Reply(Resp),
    /// An error reply, as sent (`ERR ...`).
    Error(String),
    /// No answer, ever, on this connection.
    Silent,
    /// The connection closed.
    Close,
}

/// One command and its answer; a step that names no command answers any.
#[derive(Debug, Clone)]
pub struct Step {
    pub send: Vec<String>,
    pub answer: Answer,
}

impl Step {
    pub fn new(send: &[&str], answer: Answer) -> Step {
        Step {
            send: send.iter().map(|s| s.to_string()).collect(),
            answer,
        }
    }

    /// Whatever the client sends, `answer`.
    pub fn any(answer: Answer) -> Step {
        Step {
            send: Vec::new(),
            answer,
        }
    }
}

#[derive(Default)]
struct State {
    script: VecDeque<Step>,
    received: Vec<Vec<String>>,
    connections: usize,
}

pub struct Fake {
    pub port: u16,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    accept: Option<thread::JoinHandle<()>>,
}

/// One command: an array of bulk strings.
fn read_command(reader: &mut BufReader<TcpStream>) -> Option<Vec<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let n: usize = line.trim_end().strip_prefix('*')?.parse().ok()?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let len: usize = line.trim_end().strip_prefix('$')?.parse().ok()?;
        let mut bytes = vec![0u8; len + 2];
        reader.read_exact(&mut bytes).ok()?;
        bytes.truncate(len);
        args.push(String::from_utf8_lossy(&bytes).into_owned());
    }
    Some(args)
}

fn serve(stream: TcpStream, state: Arc<Mutex<State>>) {
    let mut writer = stream.try_clone().expect("clone the fake's stream");
    let mut reader = BufReader::new(stream);
    let mut silent = false;
    let mut resp3 = false;
    while let Some(cmd) = read_command(&mut reader) {
        let mut out = Vec::new();
        if cmd.len() >= 2 && cmd[0].eq_ignore_ascii_case("CLIENT") && cmd[1].eq_ignore_ascii_case("SETINFO") {
            out.extend(b"+OK\r\n");
        } else if cmd.len() >= 2 && cmd[0].eq_ignore_ascii_case("HELLO") {
            // A client that speaks RESP3 (?protocol=resp3) asks for it first.
            resp3 = cmd[1] == "3";
            out.extend(format!("%1\r\n$5\r\nproto\r\n:{}\r\n", cmd[1]).bytes());
        } else {
            let step = {
                let mut state = state.lock().unwrap();
                state.received.push(cmd.clone());
                state.script.pop_front()
            };
            match step {
                Some(step) if step.send.is_empty() || step.send == cmd => match step.answer {
                    Answer::Reply(r) => r.encode(&mut out, resp3),
                    Answer::Error(e) => out.extend(format!("-{e}\r\n").bytes()),
                    Answer::Silent => silent = true,
                    Answer::Close => {
                        let _ = writer.shutdown(Shutdown::Both);
                        return;
                    }
                },
                // Not the script: the test sees it in what was received.
                _ => out.extend(b"-ERR fake: not the scripted command\r\n"),
            }
        }
        if !silent && writer.write_all(&out).is_err() {
            return;
        }
    }
}

impl Fake {
    pub fn start(script: Vec<Step>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            ..State::default()
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let accept = {
            let (state, stop) = (Arc::clone(&state), Arc::clone(&stop));
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    state.lock().unwrap().connections += 1;
                    let state = Arc::clone(&state);
                    thread::spawn(move || serve(stream, state));
                }
            })
        };
        Fake {
            port,
            state,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).unwrap()
    }

    /// A client that speaks RESP3 (`HELLO 3` on connecting).
    pub fn client_resp3(&self) -> redis::Client {
        redis::Client::open(format!("{}?protocol=resp3", self.url())).unwrap()
    }

    /// The commands received so far (`CLIENT SETINFO` aside).
    pub fn received(&self) -> Vec<Vec<String>> {
        self.state.lock().unwrap().received.clone()
    }

    /// How many connections were opened to it.
    pub fn connections(&self) -> usize {
        self.state.lock().unwrap().connections
    }

    /// The script's steps not reached.
    pub fn left(&self) -> usize {
        self.state.lock().unwrap().script.len()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}
