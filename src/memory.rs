//! An in-memory keyspace for the unit tests: the pipelines run against it
//! at exact instants, and it records what a server would replicate.

use crate::error::CommandError;
use crate::store::{Content, Key, Keyspace, Write};
use std::cell::RefCell;
use std::collections::HashMap;

/// A key's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    String(Vec<u8>),
    /// Another type (a list, a hash, ...).
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub value: Value,
    pub expire_at_ms: Option<u64>,
}

/// The keys of one database, and the command being run: its arguments
/// name the keys.
#[derive(Default)]
pub struct Memory {
    pub args: Vec<Vec<u8>>,
    pub keys: RefCell<HashMap<Vec<u8>, Entry>>,
    /// What replicas and the AOF would receive, one command per entry.
    pub replicated: RefCell<Vec<Vec<Vec<u8>>>>,
}

impl Memory {
    /// Set the arguments of the next command.
    pub fn command(&mut self, args: &[&[u8]]) {
        self.args = args.iter().map(|a| a.to_vec()).collect();
    }

    pub fn get(&self, key: &[u8]) -> Option<Entry> {
        self.keys.borrow().get(key).cloned()
    }

    pub fn set(&self, key: &[u8], value: Value, expire_at_ms: Option<u64>) {
        self.keys
            .borrow_mut()
            .insert(key.to_vec(), Entry { value, expire_at_ms });
    }

    /// The replicated commands, as text, and forget them.
    pub fn take_replicated(&self) -> Vec<String> {
        self.replicated
            .borrow_mut()
            .drain(..)
            .map(|c| {
                c.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }
}

impl Keyspace for Memory {
    type Key<'s> = MemoryKey<'s>;

    fn open(&self, arg: usize) -> Result<MemoryKey<'_>, CommandError> {
        let name = self.args.get(arg).ok_or(CommandError::Internal)?.clone();
        Ok(MemoryKey {
            memory: self,
            name,
            read: Vec::new(),
        })
    }
}

pub struct MemoryKey<'m> {
    memory: &'m Memory,
    name: Vec<u8>,
    /// The value as read, which `read` lends out.
    read: Vec<u8>,
}

impl MemoryKey<'_> {
    fn replicate(&self, parts: &[&[u8]]) {
        self.memory
            .replicated
            .borrow_mut()
            .push(parts.iter().map(|p| p.to_vec()).collect());
    }
}

impl Key for MemoryKey<'_> {
    fn name(&self) -> &[u8] {
        &self.name
    }

    fn read(&mut self) -> Content<'_> {
        match self.memory.get(&self.name).map(|e| e.value) {
            None => Content::Empty,
            Some(Value::Other) => Content::Other,
            Some(Value::String(bytes)) => {
                self.read = bytes;
                Content::String(&self.read)
            }
        }
    }

    /// The test keyspace has no clock: the expiry as an absolute instant
    /// in ms (-1: none), which the tests compare with their own `now`.
    fn pttl(&mut self) -> i64 {
        match self.memory.get(&self.name).and_then(|e| e.expire_at_ms) {
            Some(at) => i64::try_from(at).unwrap_or(i64::MAX),
            None => -1,
        }
    }

    fn write(&mut self, write: &Write) {
        let name = self.name.clone();
        match write {
            Write::Set {
                value, expire_at_ms, ..
            } => {
                let at = expire_at_ms.to_string();
                self.memory.set(
                    &name,
                    Value::String(value.as_slice().to_vec()),
                    Some(*expire_at_ms),
                );
                self.replicate(&[b"SET", &name, value.as_slice(), b"PXAT", at.as_bytes()]);
            }
            Write::Patch {
                patches,
                expire_at_ms,
                ..
            } => {
                let mut value = match self.memory.get(&name).map(|e| e.value) {
                    Some(Value::String(bytes)) => bytes,
                    _ => Vec::new(),
                };
                write.apply_to(&mut value);
                let at = expire_at_ms.to_string();
                self.memory
                    .set(&name, Value::String(value.clone()), Some(*expire_at_ms));
                if Write::replicated_whole(value.len()) {
                    self.replicate(&[b"SET", &name, &value, b"PXAT", at.as_bytes()]);
                } else {
                    for range in patches.ranges() {
                        let offset = range.start.to_string();
                        self.replicate(&[b"SETRANGE", &name, offset.as_bytes(), &value[range]]);
                    }
                    self.replicate(&[b"PEXPIREAT", &name, at.as_bytes()]);
                }
            }
            Write::Delete => {
                self.memory.keys.borrow_mut().remove(&name);
                self.replicate(&[b"DEL", &name]);
            }
        }
    }
}
