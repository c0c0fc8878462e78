-- The library's version: the module's (Cargo.toml), answered by rl_version.
local VERSION = '0.1.0'
