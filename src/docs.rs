//! The argument tree of each command for `COMMAND DOCS` and redis-cli's
//! hints, built from the registry (the server's structures are filled from
//! it when the module loads).

use crate::options::{Accepts, Opt};
use crate::param::Param;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    Key,
    Integer,
    PureToken,
    Block,
    OneOf,
    String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocArg {
    pub name: &'static str,
    pub kind: ArgKind,
    /// The literal token that introduces it (an option's name).
    pub token: Option<String>,
    pub optional: bool,
    pub multiple: bool,
    /// The key spec a key argument belongs to.
    pub key_spec: Option<usize>,
    pub subargs: Vec<DocArg>,
}

impl DocArg {
    pub fn new(name: &'static str, kind: ArgKind) -> DocArg {
        DocArg {
            name,
            kind,
            token: None,
            optional: false,
            multiple: false,
            key_spec: None,
            subargs: Vec::new(),
        }
    }

    pub fn key(name: &'static str) -> DocArg {
        DocArg {
            key_spec: Some(0),
            ..DocArg::new(name, ArgKind::Key)
        }
    }

    pub fn integer(name: &'static str) -> DocArg {
        DocArg::new(name, ArgKind::Integer)
    }

    /// An optional pure token (an option such as `MS`).
    pub fn option(token: &'static str, name: &'static str) -> DocArg {
        DocArg {
            token: Some(token.to_string()),
            optional: true,
            ..DocArg::new(name, ArgKind::PureToken)
        }
    }

    pub fn multiple(self) -> DocArg {
        DocArg {
            multiple: true,
            ..self
        }
    }

    pub fn optional(self) -> DocArg {
        DocArg {
            optional: true,
            ..self
        }
    }
}

/// The parameters of a rate algorithm, as integer arguments.
pub fn params(params: &[Param]) -> impl Iterator<Item = DocArg> + '_ {
    params.iter().map(|p| DocArg::integer(p.name))
}

/// One option: an optional pure token, or for an option with a value, an
/// optional integer introduced by its word (as `SET`'s `EX seconds`).
pub fn option(option: Opt) -> DocArg {
    match option.value() {
        Some(_) => DocArg {
            token: Some(option.word().to_string()),
            optional: true,
            ..DocArg::integer(option.doc_name())
        },
        None if option.takes_value() => DocArg {
            token: Some(option.word().to_string()),
            optional: true,
            ..DocArg::new(option.doc_name(), ArgKind::String)
        },
        None => DocArg::option(option.word(), option.doc_name()),
    }
}

/// `[quantity]`, then the options the command accepts.
pub fn options(accepts: Accepts) -> Vec<DocArg> {
    std::iter::once(DocArg::integer("quantity").optional())
        .chain(accepts.options().map(option))
        .collect()
}

/// A group of arguments, introduced by `token` when there is one.
pub fn block(name: &'static str, token: Option<String>, subargs: Vec<DocArg>) -> DocArg {
    DocArg {
        token,
        subargs,
        ..DocArg::new(name, ArgKind::Block)
    }
}

/// One of `alternatives`.
pub fn one_of(name: &'static str, alternatives: Vec<DocArg>) -> DocArg {
    DocArg {
        subargs: alternatives,
        ..DocArg::new(name, ArgKind::OneOf)
    }
}

/// `key params... [quantity]` and the options `accepts` names: the grammar
/// of a rate command or of the lease command.
pub fn rate(spec: &[Param], accepts: Accepts) -> Vec<DocArg> {
    std::iter::once(DocArg::key("key"))
        .chain(params(spec))
        .chain(options(accepts))
        .collect()
}
