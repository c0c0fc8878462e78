#!/usr/bin/env python3
"""Bundle functions/src/*.lua into the functions edition.

    python3 functions/build.py            write functions/ratelimit.lua
    python3 functions/build.py --check    fail when functions/ratelimit.lua is stale
    python3 functions/build.py --out DIR  write the library and every script into DIR

The library (functions/ratelimit.lua, the one file users FUNCTION LOAD) is
its header, then each part of functions/src/, in the order of PARTS, after
a line `-- part: NAME`, then the registration, written here from FUNCTIONS.
The header says, per function, what its standalone script (for EVALSHA)
holds: a prelude, the parts it needs, in order, and a last line. So the
scripts come from the library's text alone, by the rule that
`scripts_from_library` implements (docs/functions.md, "Deriving the scripts
from the library"), and are not kept in the repository.

Why the parts are laid out as they are:

- A script's text runs on every EVALSHA, up to its answer: each function it
  defines at its top level costs each call an allocation, and each local
  that such a function uses, another. So the parts a call in one pass needs
  are few, small and first (`settings` to `plain_leases`), and a script
  makes its one pass's call right after them. A one pass that cannot
  answer returns false and what it read; only then does a script go on to
  the rest: `base` (the guard that words a failure) and the general path
  (every option, every form of state, every error), the parts from
  `general` to `general_end`, the body of one function, built on the first
  call that needs it (once in the library; in a script, only by a call that
  takes that path).
- Lua 5.1 allows 200 locals in a function. Each part of the general path
  keeps its helpers local to a block of its own and declares before it only
  what later parts use: the library's top level holds the one-pass parts'
  names, and the general path's function the parts' exports, each well
  under the limit (the tests compile the library with Lua 5.1).
"""
import argparse
import pathlib
import re
import sys
from dataclasses import dataclass

HERE = pathlib.Path(__file__).resolve().parent
SRC = HERE / "src"
LIBRARY = HERE / "ratelimit.lua"

# The parts, in the library's order.
PARTS = [
    # What a call in one pass needs: the top of every script.
    "settings", "version", "exact", "plain",
    "plain_gcra", "plain_token_bucket", "plain_fixed", "plain_sliding_log", "plain_sliding_counter",
    "plain_rate", "plain_all", "plain_leases",
    # The guard, and the general path: the body of `general`, built on first
    # use (a script's rest, after its one pass's call).
    "base", "general", "bounds", "errors", "limbs", "args", "options", "decision",
    "codec", "codec_gcra", "codec_token_bucket", "codec_fixed_window", "codec_sliding_log",
    "codec_sliding_counter", "codec_concurrency",
    "writes", "frame", "algorithms",
    "gcra", "token_bucket", "fixed_window", "sliding_log", "sliding_counter", "concurrency",
    "request", "store", "rate", "all", "leases", "inspect", "general_end",
    # The library's alone: what its functions keep between calls.
    "kept",
]

# The line a script starts with: Redis 6.x replicates a script verbatim
# unless told to replicate its effects, and a script that reads TIME may only
# write when its effects are replicated. Redis 7.0 and later always do, and
# tell scripts their version: there the call, a no-op, is skipped (it cost
# each EVALSHA about 400 instructions).
PRELUDE = "if not redis.REDIS_VERSION_NUM then redis.replicate_commands() end"

# What every script of a function with a general path holds: its one
# pass's parts, and after the call, the rest.
ONE_PASS = ["settings", "exact", "plain"]
GENERAL = [
    "base", "general", "bounds", "errors", "limbs", "args", "options", "decision",
    "codec", "codec_gcra", "codec_token_bucket", "codec_fixed_window", "codec_sliding_log",
    "codec_sliding_counter", "codec_concurrency", "writes",
]
RATE_GENERAL = GENERAL + ["frame", "algorithms"]
# What the rate functions' one pass is handed besides its algorithm's
# functions (`rate`, `all`): in a script, an argument costs a call nothing,
# a local taken from outside costs an allocation.
HELPERS = "request, write, settings, decimal"
ALGORITHMS = ["gcra", "token_bucket", "fixed_window", "sliding_log", "sliding_counter"]


@dataclass
class Function:
    """A function of the library: the parts its one pass needs, and those of
    the rest (the guard and the general path; none: the one pass is all),
    its one pass's call (its arguments a Lua list) and the general path's
    call (a function of the general path, then its arguments), with {keys},
    {args} and {kept} for what the library and a script pass (KEYS, ARGV
    and nil in a script: it keeps nothing), and {a}, {b} for what the one
    pass handed over."""

    name: str
    parts: list
    call: str
    rest: list = ()
    general: str = None
    # What the library's function keeps between calls (a Lua expression),
    # or None.
    kept: str = None
    flags: tuple = ()


def rate_function(name, one_pass, algorithm, number, params, plain):
    return Function(
        name,
        ONE_PASS + [one_pass, "plain_rate"],
        f"rate, {{keys}}, {{args}}, {{kept}}, {number}, {params}, {plain}_limiter, {HELPERS}",
        RATE_GENERAL + [algorithm, "request", "store", "rate", "general_end"],
        f"general().rate, {number}, {{keys}}, {{args}}, {{a}}, {{b}}",
        kept="new_kept()",
    )


LEASES = GENERAL + ["concurrency", "store", "leases", "general_end"]


def lease_function(name, call):
    return Function(
        name,
        ONE_PASS + ["plain_leases"],
        f"{call}, {{keys}}, {{args}}",
        LEASES,
        f"general().{call}, {{keys}}, {{args}}, {{a}}, {{b}}",
    )


# What the read-only functions (rl_log, rl_inspect) hold: no one pass (they
# are not hot paths), the general path's reading of every state.
VIEWS = [
    "settings", "exact", "base", "general", "bounds", "errors", "limbs", "args", "decision",
    "codec", "codec_gcra", "codec_token_bucket", "codec_fixed_window", "codec_sliding_log",
    "codec_sliding_counter", "codec_concurrency", "store", "inspect", "general_end",
]


def view_function(name, call):
    return Function(name, VIEWS, f"guard(general().{call}, {{keys}}, {{args}})", flags=("no-writes",))


FUNCTIONS = [
    rate_function("rl_gcra", "plain_gcra", "gcra", 1, 3, "gcra"),
    rate_function("rl_token_bucket", "plain_token_bucket", "token_bucket", 2, 3, "bucket"),
    rate_function("rl_fixed", "plain_fixed", "fixed_window", 3, 2, "fixed"),
    rate_function("rl_sliding_log", "plain_sliding_log", "sliding_log", 4, 2, "log"),
    rate_function("rl_sliding_counter", "plain_sliding_counter", "sliding_counter", 5, 2, "counter"),
    Function(
        "rl_all",
        ONE_PASS + [f"plain_{a}" for a in ["gcra", "token_bucket", "fixed", "sliding_log", "sliding_counter"]]
        + ["plain_all"],
        f"all, {{keys}}, {{args}}, {{kept}}, {HELPERS}, "
        + ", ".join(f"{a}_limiter" for a in ["gcra", "bucket", "fixed", "log", "counter"]),
        RATE_GENERAL + ALGORITHMS + ["request", "store", "rate", "all", "general_end"],
        "general().all, {keys}, {args}, {a}, {b}",
        # Each algorithm's limiters, by its number.
        kept="new_kept(5)",
    ),
    lease_function("rl_concurrency", "concurrency"),
    lease_function("rl_release", "release"),
    lease_function("rl_renew", "renew"),
    Function("rl_version", ["version"], "VERSION", flags=("no-writes", "allow-stale")),
    view_function("rl_log", "log"),
    view_function("rl_inspect", "inspect"),
]

MARKER = "-- part: "
SCRIPT = "-- script "


def header():
    lines = [
        "#!lua name=ratelimit",
        "-- redis-ratelimit, the functions edition (SPEC 17): the module's commands",
        "-- as a Redis Functions library: the module's answers and bytes.",
        "--",
        '--   redis-cli -x FUNCTION LOAD REPLACE < functions/ratelimit.lua',
        "--   FCALL rl_gcra 1 user:42 9 10 1 MS WAIT 500",
        "--",
        "-- Written by functions/build.py from functions/src/ (edit those): each",
        "-- part is the file of its name, after a line `-- part: NAME`. A",
        "-- function's script, for EVALSHA (docs/functions.md), is its line below:",
        "-- `-- script NAME: LINE | PARTS | LINE | PARTS | LINE`, each LINE a line",
        "-- of its own and each PARTS the parts it names, in order (the last two",
        "-- fields may be absent).",
    ]
    for f in FUNCTIONS:
        fields = [PRELUDE, " ".join(f.parts)] + script_calls(f)
        if f.rest:
            fields[3:3] = [" ".join(f.rest)]
        for field in fields:
            if " | " in field or "\n" in field:
                sys.exit(f"{f.name}: a script line's field may not hold ' | ' or a newline: {field!r}")
        lines.append(f"{SCRIPT}{f.name}: {' | '.join(fields)}")
    return "\n".join(lines) + "\n"


def script_calls(f, keys="KEYS", args="ARGV", kept="nil"):
    """A function's lines (a script's after its one pass's parts; the
    library's function's body): the one pass's call, answered where it
    answers; then (in a script, after the rest's parts) a failure worded or
    the general path's call."""
    call = f.call.format(keys=keys, args=args, kept=kept)
    if not f.rest:
        return [f"return {call}"]
    general = f.general.format(keys=keys, args=args, a="a", b="b")
    return [
        f"local ok, reply, a, b = pcall({call}) if ok and reply ~= false then return reply end",
        f"if not ok then return failure(reply) end return guard({general})",
    ]


def flagged_callback(f):
    """The callback of a function registered with flags (one line: its
    script's call, with what the library passes)."""
    params = "keys, args" if "{keys}" in f.call else ""
    return f"function({params}) return {f.call.format(keys='keys', args='args', kept='nil')} end"


def registration():
    lines = [
        f"{MARKER}register",
        "-- The functions: each runs its script's lines, with what it keeps.",
    ]
    for f in FUNCTIONS:
        if f.flags:
            flags = ", ".join(f"'{flag}'" for flag in f.flags)
            callback = flagged_callback(f)
            lines.append(
                f"redis.register_function {{ function_name = '{f.name}', callback = {callback}, flags = {{ {flags} }} }}"
            )
            continue
        register = [f"redis.register_function('{f.name}', function(keys, args)"]
        register += [f"  {line}" for line in script_calls(f, "keys", "args", "kept")]
        register.append("end)")
        if f.kept:
            lines += ["do", f"  local kept = {f.kept}"] + [f"  {line}" for line in register] + ["end"]
        else:
            lines += register
    return "\n".join(lines) + "\n"


def read_part(name):
    path = SRC / f"{name}.lua"
    text = path.read_text()
    if not text.endswith("\n") or text.endswith("\n\n"):
        sys.exit(f"{path}: end it with exactly one newline")
    for line in text.splitlines():
        if line.startswith(MARKER):
            sys.exit(f"{path}: a line may not start with {MARKER!r} (it would start a part)")
    return text


def library():
    """The library's text, from the parts."""
    known = {p.stem for p in SRC.glob("*.lua")}
    if set(PARTS) != known:
        sys.exit(f"functions/src and PARTS differ: {sorted(known ^ set(PARTS))}")
    for f in FUNCTIONS:
        parts = f.parts + list(f.rest)
        order = [PARTS.index(p) for p in parts if p in PARTS]
        if len(order) != len(parts) or order != sorted(order) or len(set(parts)) != len(parts):
            sys.exit(f"{f.name}: its parts must be parts of the library, each once, in the library's order")
    out = [header()]
    for name in PARTS:
        out.append(f"{MARKER}{name}\n{read_part(name)}")
    out.append(registration())
    return "".join(out)


def scripts_from_library(text):
    """Each function's script, from the library's text (the rule of
    docs/functions.md, "Deriving the scripts from the library").

    The header is the lines before the first part line (a line that starts
    with '-- part: '); a part is its line and the lines after it up to the
    next part line. A header line '-- script NAME: FIELDS' gives function
    NAME's script: FIELDS, apart by ' | ', are in turn a line, the names of
    parts (apart by spaces), a line, and so on; each line is written with a
    newline after it, and each part named, whole, in turn.
    """
    parts, recipes, current = {}, {}, None
    # Lines end at '\n' alone (str.splitlines would also break at '\f',
    # '\x85', '\u2028', ...).
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    for line in lines:
        if line.startswith(MARKER):
            current = line[len(MARKER):].strip()
            parts[current] = []
        if current is not None:
            parts[current].append(line)
        elif line.startswith(SCRIPT):
            name, _, recipe = line[len(SCRIPT):].rstrip("\n").partition(": ")
            recipes[name] = recipe.split(" | ")
    scripts = {}
    for name, fields in recipes.items():
        out = []
        for i, field in enumerate(fields):
            if i % 2 == 0:
                out.append(field + "\n")
            else:
                out += ["".join(parts[p]) for p in field.split(" ")]
        scripts[name] = "".join(out)
    return scripts


def main(argv=None):
    parser = argparse.ArgumentParser(description="Bundle functions/src into the functions edition.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--check", action="store_true", help="fail when functions/ratelimit.lua is stale")
    group.add_argument("--out", metavar="DIR", help="write ratelimit.lua and a script per function into DIR")
    args = parser.parse_args(argv)
    text = library()
    if args.check:
        if not LIBRARY.exists() or LIBRARY.read_text() != text:
            sys.exit("functions/ratelimit.lua is not current: run python3 functions/build.py")
        print("functions/ratelimit.lua: current")
        return
    if args.out:
        out = pathlib.Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "ratelimit.lua").write_text(text)
        scripts = scripts_from_library(text)
        for name, script in scripts.items():
            (out / f"{name}.lua").write_text(script)
        print(f"{out}: ratelimit.lua and {len(scripts)} scripts")
        return
    LIBRARY.write_text(text)
    print(f"functions/ratelimit.lua: {len(text.splitlines())} lines from {len(PARTS)} parts")


if __name__ == "__main__":
    main()
