//! The options table: every option word a command may take after its
//! quantity, the value each takes, which exclude which, and which commands
//! take which. The grammar (`args`), the error texts that list them
//! (`error`) and `COMMAND DOCS` (`docs`) all read it; nothing else spells
//! an option.

use crate::param::Param;
use rl_core::bounds::{MAX_BLOCK_MICROS, MAX_WAIT_MICROS};

/// One option word a command may take after its quantity. The words, the
/// values they take, which ones exclude which, the error texts that list
/// them and `COMMAND DOCS` all come from here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Ms,
    Peek,
    Refund,
    Force,
    Wait,
    AtMost,
    Block,
    Tag,
}

/// `BLOCK duration`: 1 to 10^9 seconds (10^12 ms with `MS`).
pub const BLOCK_DURATION: Param = Param {
    name: "BLOCK duration",
    min: 1,
    max: MAX_BLOCK_MICROS,
    cap: None,
    duration: true,
};

/// `WAIT max_wait`: 0 to 10^9 seconds (10^12 ms with `MS`).
pub const MAX_WAIT: Param = Param {
    name: "WAIT max_wait",
    min: 0,
    max: MAX_WAIT_MICROS,
    cap: None,
    duration: true,
};

/// How the units are taken: one of these at most.
const TAKE_WAYS: &str = "each says how the units are taken: choose one";

/// Options that cannot be given together, and why.
pub const EXCLUSIVE: [(Opt, Opt, &str); 9] = [
    (Opt::Refund, Opt::Force, TAKE_WAYS),
    (Opt::Refund, Opt::Wait, TAKE_WAYS),
    (Opt::Refund, Opt::AtMost, TAKE_WAYS),
    (Opt::Force, Opt::Wait, TAKE_WAYS),
    (Opt::Force, Opt::AtMost, TAKE_WAYS),
    (Opt::Wait, Opt::AtMost, TAKE_WAYS),
    (Opt::Refund, Opt::Block, "a refund is never refused"),
    (Opt::Force, Opt::Block, "a forced request is never refused"),
    (
        Opt::Refund,
        Opt::Tag,
        "a refund gives back the newest units, whoever logged them",
    ),
];

/// The options some other excludes: a call that names at most one of them
/// need not look through [`EXCLUSIVE`].
pub const EXCLUDING: u8 = {
    let mut mask = 0;
    let mut i = 0;
    while i < EXCLUSIVE.len() {
        mask |= EXCLUSIVE[i].0.bit() | EXCLUSIVE[i].1.bit();
        i += 1;
    }
    mask
};

impl Opt {
    pub const ALL: [Opt; 8] = [
        Opt::Ms,
        Opt::Peek,
        Opt::Refund,
        Opt::Force,
        Opt::Wait,
        Opt::AtMost,
        Opt::Block,
        Opt::Tag,
    ];

    /// The word as written in the grammar (matched in any case).
    pub const fn word(self) -> &'static str {
        match self {
            Opt::Ms => "MS",
            Opt::Peek => "PEEK",
            Opt::Refund => "REFUND",
            Opt::Force => "FORCE",
            Opt::Wait => "WAIT",
            Opt::AtMost => "AT_MOST",
            Opt::Block => "BLOCK",
            Opt::Tag => "TAG",
        }
    }

    /// Its name in `COMMAND DOCS`.
    pub const fn doc_name(self) -> &'static str {
        match self {
            Opt::Ms => "ms",
            Opt::Peek => "peek",
            Opt::Refund => "refund",
            Opt::Force => "force",
            Opt::Wait => "max_wait",
            Opt::AtMost => "at_most",
            Opt::Block => "duration",
            Opt::Tag => "value",
        }
    }

    /// The value that follows the word, for those that take one.
    pub const fn value(self) -> Option<Param> {
        match self {
            Opt::Block => Some(BLOCK_DURATION),
            Opt::Wait => Some(MAX_WAIT),
            Opt::Ms | Opt::Peek | Opt::Refund | Opt::Force | Opt::AtMost | Opt::Tag => None,
        }
    }

    /// Whether a value follows the word: a number (see [`Opt::value`]), or
    /// `TAG`'s bytes.
    pub const fn takes_value(self) -> bool {
        self.value().is_some() || matches!(self, Opt::Tag)
    }

    /// What its value is, for the error that finds it missing.
    pub const fn value_name(self) -> &'static str {
        match self.value() {
            Some(param) => param.name,
            None => "TAG value",
        }
    }

    /// Its bit in a set of options.
    pub const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The options a command takes after its quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Accepts(pub &'static [Opt]);

impl Accepts {
    /// The rate commands that log (the sliding log), and several at once:
    /// every option, `TAG` included.
    pub const RATE: Accepts = Accepts(&Opt::ALL);
    /// The other rate commands: every option but `TAG`.
    pub const UNTAGGED: Accepts = Accepts(&[
        Opt::Ms,
        Opt::Peek,
        Opt::Refund,
        Opt::Force,
        Opt::Wait,
        Opt::AtMost,
        Opt::Block,
    ]);
    /// The lease command.
    pub const LEASE: Accepts = Accepts(&[Opt::Ms, Opt::Peek]);
    /// A command that takes only a unit.
    pub const UNIT: Accepts = Accepts(&[Opt::Ms]);

    pub fn options(self) -> impl Iterator<Item = Opt> {
        self.0.iter().copied()
    }

    /// The option `token` names, if this command takes it.
    pub fn find(self, token: &[u8]) -> Option<Opt> {
        self.options()
            .find(|o| token.eq_ignore_ascii_case(o.word().as_bytes()))
    }

    /// The words, joined for a sentence: `MS, PEEK or REFUND` (`last`: "or"
    /// or "and").
    pub fn words(self, last: &str) -> String {
        let words: Vec<&str> = self.options().map(Opt::word).collect();
        sentence(&words, last)
    }
}

/// `a, b and c` (`last`: "and" or "or").
pub fn sentence<S: AsRef<str>>(words: &[S], last: &str) -> String {
    match words.split_last() {
        Some((only, [])) => only.as_ref().to_string(),
        Some((final_word, rest)) => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} {last} {}", rest.join(", "), final_word.as_ref())
        }
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_option_word_is_found_in_any_case_and_nothing_else() {
        for option in Opt::ALL {
            let word = option.word();
            let lower = word.to_ascii_lowercase();
            let mixed: String = word
                .chars()
                .enumerate()
                .map(|(i, c)| if i % 2 == 0 { c.to_ascii_lowercase() } else { c })
                .collect();
            for token in [word, lower.as_str(), mixed.as_str()] {
                assert_eq!(Accepts::RATE.find(token.as_bytes()), Some(option), "{token}");
            }
            // One letter changed, one added, one dropped: no option.
            let mut changed = word.as_bytes().to_vec();
            changed[1] ^= 0x01;
            assert_eq!(Accepts::RATE.find(&changed), None, "{word}");
            assert_eq!(Accepts::RATE.find(format!("{word}S").as_bytes()), None, "{word}");
            assert_eq!(Accepts::RATE.find(&word.as_bytes()[1..]), None, "{word}");
        }
        for token in [
            "",
            "M",
            "AT-MOST",
            "PEAK",
            "WAIT ",
            "BLOCK\0",
            "5",
            "\u{e9}\u{e9}",
        ] {
            assert_eq!(Accepts::RATE.find(token.as_bytes()), None, "{token:?}");
        }
        assert_eq!(Accepts::LEASE.find(b"force"), None);
        assert_eq!(Accepts::LEASE.find(b"peek"), Some(Opt::Peek));
    }
}
