"""Tests of functions/build.py: python3 -m unittest discover -s functions -p 'test_*.py'.

The Lua checks compile with Lua 5.1's luac (Redis's Lua; .ci/setup
installs it)."""
import contextlib
import io
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import build  # noqa: E402

LUAC = shutil.which("luac5.1") or shutil.which("luac")

SMALL = """#!lua name=x
-- a header line
-- script f: PRE | b a | return f(KEYS, ARGV)
-- script g: PRE2 | c | LAST
-- script h: PRE3 | c | MID | a b | LAST3
-- part: a
local A = 1
-- part: b
local function f() return 2 end
-- part: c
local C = 3
"""


class Rule(unittest.TestCase):
    def test_a_script_is_its_prelude_its_parts_in_its_order_and_its_last_line(self):
        self.assertEqual(
            build.scripts_from_library(SMALL),
            {
                "f": "PRE\n-- part: b\nlocal function f() return 2 end\n-- part: a\nlocal A = 1\nreturn f(KEYS, ARGV)\n",
                "g": "PRE2\n-- part: c\nlocal C = 3\nLAST\n",
                "h": "PRE3\n-- part: c\nlocal C = 3\nMID\n-- part: a\nlocal A = 1\n-- part: b\nlocal function f() return 2 end\nLAST3\n",
            },
        )

    def test_lines_end_at_newlines_only(self):
        text = SMALL.replace("local C = 3\n", "local C = '\f\x85\u2028'\n")
        self.assertEqual(build.scripts_from_library(text)["g"], "PRE2\n-- part: c\nlocal C = '\f\x85\u2028'\nLAST\n")

    def test_only_header_lines_name_scripts(self):
        text = SMALL + "-- script k: X | a | Y\n"
        self.assertEqual(sorted(build.scripts_from_library(text)), ["f", "g", "h"])
        # ... and the line is part c's text.
        self.assertTrue(build.scripts_from_library(text)["g"].endswith("local C = 3\n-- script k: X | a | Y\nLAST\n"))

    def test_every_function_has_a_script_of_the_parts_it_lists(self):
        text = build.LIBRARY.read_text()
        scripts = build.scripts_from_library(text)
        self.assertEqual(sorted(scripts), sorted(f.name for f in build.FUNCTIONS))
        for f in build.FUNCTIONS:
            script = scripts[f.name]
            self.assertEqual(re.findall(r"^-- part: (\w+)$", script, re.M), f.parts + list(f.rest), f.name)
            self.assertTrue(script.startswith(build.PRELUDE + "\n-- part: "), f.name)
            lines = build.script_calls(f)
            self.assertTrue(script.endswith(f"\n{lines[-1]}\n"), f.name)
            if f.rest:
                # The one pass's call right after its parts: the rest only
                # in a call it does not answer.
                one_pass, _, rest = script.partition(f"\n{lines[0]}\n")
                self.assertEqual(re.findall(r"^-- part: (\w+)$", one_pass, re.M), f.parts, f.name)
                self.assertEqual(re.findall(r"^-- part: (\w+)$", rest, re.M), list(f.rest), f.name)


class Library(unittest.TestCase):
    def test_the_library_in_the_repository_is_current(self):
        self.assertEqual(build.LIBRARY.read_text(), build.library())

    def test_each_part_follows_its_line_in_order(self):
        text = build.library()
        self.assertEqual(re.findall(r"^-- part: (\w+)$", text, re.M), build.PARTS + ["register"])
        for name in build.PARTS:
            self.assertIn(f"-- part: {name}\n{(build.SRC / (name + '.lua')).read_text()}", text)

    def test_the_registration_runs_the_lines_its_script_runs(self):
        register = build.library().split("-- part: register\n")[1]
        for f in build.FUNCTIONS:
            if f.flags:
                self.assertIn(f"function_name = '{f.name}', callback = {build.flagged_callback(f)}", register)
                # The same call as its script's last line.
                self.assertEqual(build.flagged_callback(f).split(" return ", 1)[1],
                                 build.script_calls(f, "keys", "args")[0][len("return "):] + " end")
                continue
            indent = "    " if f.kept else "  "
            body = "".join(f"{indent}{line}\n" for line in build.script_calls(f, "keys", "args", "kept"))
            self.assertEqual(register.count(f"redis.register_function('{f.name}', function(keys, args)\n{body}"), 1, f.name)
            # The same lines as its script's, with what the library passes.
            self.assertEqual(
                build.script_calls(f, "keys", "args", "kept"),
                [line.replace("KEYS", "keys").replace("ARGV", "args").replace("nil", "kept") for line in build.script_calls(f)],
            )
        self.assertEqual(register.count("redis.register_function"), len(build.FUNCTIONS))

    def test_the_version_is_the_module_s(self):
        cargo = (build.HERE.parent / "Cargo.toml").read_text()
        version = re.search(r'^version = "([^"]+)"', cargo, re.M).group(1)
        self.assertEqual((build.SRC / "version.lua").read_text().count(f"local VERSION = '{version}'\n"), 1)

    def test_every_documented_load_reads_the_library_from_standard_input(self):
        # Past 128 KiB, the most Linux takes in one command-line argument:
        # `FUNCTION LOAD REPLACE "$(cat functions/ratelimit.lua)"` fails.
        self.assertGreater(len(build.library().encode()), 128 * 1024)
        root = build.HERE.parent
        for path in [root / "README.md", *sorted((root / "docs").glob("*.md")), build.HERE / "build.py"]:
            text = path.read_text()
            self.assertNotIn('LOAD REPLACE "$(cat', text, path.name)
            for line in text.splitlines():
                if "FUNCTION LOAD REPLACE <" in line:
                    self.assertIn("redis-cli -x ", line, path.name)

    def test_a_part_line_inside_a_part_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / "a.lua").write_text("local a\n-- part: b\n")
            with mock.patch.object(build, "SRC", pathlib.Path(tmp)), self.assertRaises(SystemExit) as e:
                build.read_part("a")
            self.assertIn("may not start with '-- part: '", str(e.exception))

    def test_parts_and_files_must_agree(self):
        with mock.patch.object(build, "PARTS", build.PARTS[:-1]), self.assertRaises(SystemExit) as e:
            build.library()
        self.assertEqual(str(e.exception), "functions/src and PARTS differ: ['kept']")

    def test_a_script_s_parts_keep_the_library_s_order(self):
        f = build.FUNCTIONS[0]
        swapped = build.Function(f.name, [f.parts[1], f.parts[0]] + f.parts[2:], f.call, f.kept)
        with mock.patch.object(build, "FUNCTIONS", [swapped]), self.assertRaises(SystemExit) as e:
            build.library()
        self.assertEqual(str(e.exception), "rl_gcra: its parts must be parts of the library, each once, in the library's order")


class Commands(unittest.TestCase):
    def run_main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            build.main(list(argv))
        return out.getvalue()

    def test_out_writes_the_library_and_every_script_and_nothing_else(self):
        with tempfile.TemporaryDirectory() as tmp:
            dest = pathlib.Path(tmp) / "lua"
            self.assertEqual(self.run_main("--out", str(dest)), f"{dest}: ratelimit.lua and 12 scripts\n")
            text = build.library()
            expected = {"ratelimit.lua": text}
            expected.update({f"{n}.lua": s for n, s in build.scripts_from_library(text).items()})
            self.assertEqual({p.name: p.read_text() for p in dest.iterdir()}, expected)

    def test_check_fails_when_the_library_is_stale(self):
        with tempfile.TemporaryDirectory() as tmp:
            stale = pathlib.Path(tmp) / "ratelimit.lua"
            stale.write_text(build.library() + "-- edited\n")
            with mock.patch.object(build, "LIBRARY", stale):
                with self.assertRaises(SystemExit) as e:
                    self.run_main("--check")
                self.assertEqual(str(e.exception), "functions/ratelimit.lua is not current: run python3 functions/build.py")
                self.assertEqual(self.run_main(), f"functions/ratelimit.lua: {len(build.library().splitlines())} lines from {len(build.PARTS)} parts\n")
                self.assertEqual(self.run_main("--check"), "functions/ratelimit.lua: current\n")


# What a function may find in the globals: Redis's libraries, and what a
# script is given.
GLOBALS = {"redis", "string", "math", "table", "struct", "unpack", "pcall", "error", "type", "setmetatable", "ipairs"}


def globals_of(path):
    """The names each function of a compiled chunk reads or writes as
    globals: {'main': {...}, 'functions': {...}}, and the writes."""
    listing = subprocess.run([LUAC, "-p", "-l", str(path)], capture_output=True, text=True, check=True).stdout
    out, writes, current = {"main": set(), "functions": set()}, set(), None
    for line in listing.splitlines():
        if line.startswith("main <"):
            current = "main"
        elif line.startswith("function <"):
            current = "functions"
        m = re.search(r"\b([GS]ETGLOBAL)\b.*; (\w+)$", line)
        if m:
            (writes if m.group(1) == "SETGLOBAL" else out[current]).add(m.group(2))
    return out, writes


def main_opcodes(path):
    """The opcodes of a compiled chunk's top level, in order."""
    listing = subprocess.run([LUAC, "-p", "-l", str(path)], capture_output=True, text=True, check=True).stdout
    main = listing.split("\nfunction <")[0]
    return re.findall(r"^\s+\d+\s+\[\d+\]\s+(\w+)", main, re.M)


@unittest.skipUnless(LUAC, "needs Lua 5.1's luac (.ci/setup installs it)")
class Lua(unittest.TestCase):
    def test_the_library_and_every_script_compile_and_use_only_redis_s_globals(self):
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            build.main(["--out", tmp])
            for path in sorted(pathlib.Path(tmp).iterdir()):
                used, writes = globals_of(path)
                self.assertEqual(writes, set(), path.name)
                self.assertLessEqual(used["functions"], GLOBALS, path.name)
                if path.name == "ratelimit.lua":
                    # FUNCTION LOAD on Redis 7.0 runs the top level with
                    # `redis` alone.
                    self.assertEqual(used["main"], {"redis"})
                else:
                    self.assertLessEqual(used["main"], {"redis", "KEYS", "ARGV", "pcall"}, path.name)

    def test_a_script_s_top_level_builds_no_table(self):
        # Its whole text runs on every EVALSHA: a table built there (the
        # settings, a constant) would cost every call, used or not.
        with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
            build.main(["--out", tmp])
            for path in sorted(pathlib.Path(tmp).glob("rl_*.lua")):
                self.assertEqual(main_opcodes(path).count("NEWTABLE"), 0, path.name)

    def test_a_table_at_a_script_s_top_level_is_seen(self):
        with tempfile.TemporaryDirectory() as tmp:
            script = pathlib.Path(tmp) / "s.lua"
            script.write_text("local SETTINGS = { shadow = false }\nreturn SETTINGS.shadow\n")
            self.assertEqual(main_opcodes(script).count("NEWTABLE"), 1)

    def test_a_name_no_part_defines_is_found(self):
        # The check above sees a part that uses what its script lacks.
        with tempfile.TemporaryDirectory() as tmp:
            script = pathlib.Path(tmp) / "s.lua"
            script.write_text("local function f() return open_frame(1) end\nreturn f()\n")
            self.assertEqual(globals_of(script)[0]["functions"], {"open_frame"})


if __name__ == "__main__":
    unittest.main()
