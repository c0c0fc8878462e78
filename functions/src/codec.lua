-- Codecs: the module's bytes (src/codec/*.rs). `decode` answers the state,
-- or nil and what is wrong with it, or nil, nil and true for a valid state
-- this edition cannot compute exactly.
--
-- The state of each rate command, in the order of the algorithms
-- (ALGORITHMS, below): its command, the tags its bytes start with, its
-- decoder and encoder. Every function holds every codec (an error names
-- the command whose state a key holds).
local STATES = {}
