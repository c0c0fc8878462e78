"""Draw allowed requests over time for one bursty client under each of the
five algorithms, from real calls to a live server with the module.

    pip install redis
    REDIS_PORT=6379 python compare.py        # writes target/compare/algorithms.svg
    python compare.py --out algorithms.svg   # or where you say (the committed
                                             # drawing is examples/compare/algorithms.svg)

Every algorithm gets the same budget, 10 requests per 500 ms, and the same
traffic: 2.5 s of 20 ms ticks offering 0 to 4 requests each (a burst, a
lull, a steady stream, a second burst). All five limiters see each tick in
one pipeline, so they decide at the same instants.
"""

import os
import sys
import time

import redis

r = redis.Redis(host=os.environ.get("REDIS_HOST", "127.0.0.1"), port=int(os.environ.get("REDIS_PORT", "6379")))
run = str(time.time_ns())

ALGORITHMS = [
    ("RL.GCRA (max_burst 9, 10 per 500 ms)", ["RL.GCRA", "9", "10", "500"]),
    ("RL.TOKEN_BUCKET (capacity 10, 10 per 500 ms)", ["RL.TOKEN_BUCKET", "10", "10", "500"]),
    ("RL.FIXED (10 per 500 ms window)", ["RL.FIXED", "10", "500"]),
    ("RL.SLIDING_LOG (10 in any 500 ms)", ["RL.SLIDING_LOG", "10", "500"]),
    ("RL.SLIDING_COUNTER (about 10 in any 500 ms)", ["RL.SLIDING_COUNTER", "10", "500"]),
]
TICK = 0.02
TICKS = 125


def offered(i):
    """Requests offered at tick i: burst, lull, steady, burst."""
    if i < 15:
        return 4
    if i < 45:
        return 0
    if i < 95:
        return 1
    return 3


def main():
    allowed = [[0] * TICKS for _ in ALGORITHMS]
    start = time.monotonic()
    for i in range(TICKS):
        pipe = r.pipeline(transaction=False)
        for _ in range(offered(i)):
            for name, (cmd, *params) in ALGORITHMS:
                pipe.execute_command(cmd, f"compare:{run}:{cmd}", *params, 1, "MS")
        replies = pipe.execute()
        for j, reply in enumerate(replies):
            if reply[0] == 0:
                allowed[j % len(ALGORITHMS)][i] += 1
        time.sleep(max(0.0, start + (i + 1) * TICK - time.monotonic()))
    write_svg(allowed)
    for (name, _), row in zip(ALGORITHMS, allowed):
        print(f"{sum(row):3d} of {sum(offered(i) for i in range(TICKS))} allowed: {name}")


def output_path():
    """--out PATH if given, else target/compare/algorithms.svg under the
    repository: a run never rewrites a tracked file unless asked to."""
    if "--out" in sys.argv[1:-1]:
        return sys.argv[sys.argv.index("--out") + 1]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.makedirs(os.path.join(root, "target", "compare"), exist_ok=True)
    return os.path.join(root, "target", "compare", "algorithms.svg")


def write_svg(allowed):
    width, row_h, left, bar = 780, 90, 24, 5.8
    height = row_h * len(ALGORITHMS) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    for k, ((name, _), row) in enumerate(zip(ALGORITHMS, allowed)):
        base = 20 + row_h * (k + 1) - 12
        out.append(f'<text x="{left}" y="{base - row_h + 28}" font-weight="bold">{name}</text>')
        for i in range(TICKS):
            x = left + i * bar
            o, a = offered(i), row[i]
            out.append(f'<rect x="{x:.1f}" y="{base - 12 * o}" width="{bar - 1:.1f}" height="{12 * o}" fill="#dddddd"/>')
            if a:
                out.append(
                    f'<rect x="{x:.1f}" y="{base - 12 * a}" width="{bar - 1:.1f}" height="{12 * a}" fill="#2b6cb0"/>'
                )
        out.append(f'<line x1="{left}" y1="{base}" x2="{left + TICKS * bar}" y2="{base}" stroke="#888"/>')
    axis = 20 + row_h * len(ALGORITHMS) + 4
    for ms in range(0, 2501, 500):
        x = left + ms / 1000 / TICK * bar
        out.append(f'<text x="{x:.1f}" y="{axis}" text-anchor="middle">{ms} ms</text>')
    out.append(
        f'<text x="{width - 10}" y="{axis + 14}" text-anchor="end" fill="#555">'
        "grey: requests offered per 20 ms tick; blue: allowed</text>"
    )
    out.append("</svg>")
    path = output_path()
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
