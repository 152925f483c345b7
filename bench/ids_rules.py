"""Rule files for sluice-ids's throughput against rule count (10, 100, 1,000 rules).

``python bench/ids_rules.py N`` prints N rules (a fixed seed: the same N
always gives the same file); ``--bench-json`` writes nfs/ids/bench.json,
whose ``variants`` 10, 100 and 1000 carry those files for bench/nfs.py.

The rules are the mix a signature set has: most are one literal content
(8 to 16 bytes, some with ``nocase`` or ``|hex|`` bytes), some anchored
with offset/depth, some two contents with distance/within, a few pcre;
ports and addresses vary. None of them matches the benchmark traffic
(64-byte UDP packets, examples/traces/http-mix.pcap), so what is measured
is the scan of every payload byte against the whole database, not alerts.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COUNTS = (10, 100, 1000)
SEED = 29
LETTERS = "bcdfghjkmnpqrstvwxz"  # no vowels: no English word, no HTTP text


def _word(rng: random.Random, lo: int, hi: int) -> str:
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(lo, hi)))


def _contents(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.55:
        opts = f'content:"{_word(rng, 8, 16)}";'
        if rng.random() < 0.3:
            opts += " nocase;"
        return opts
    if kind < 0.70:
        hexed = " ".join(f"{rng.randrange(256):02x}" for _ in range(4))
        return f'content:"{_word(rng, 4, 8)}|{hexed}|";'
    if kind < 0.82:
        w = _word(rng, 6, 10)
        return f'content:"{w}"; offset:{rng.randint(0, 20)}; depth:{len(w) + rng.randint(0, 40)};'
    if kind < 0.94:
        a, b = _word(rng, 5, 8), _word(rng, 5, 8)
        d = rng.randint(0, 10)
        return f'content:"{a}"; content:"{b}"; distance:{d}; within:{d + len(b) + 30};'
    return f'pcre:"/{_word(rng, 4, 6)}[0-9]{{2,4}}{_word(rng, 3, 5)}/i";'


def rules(n: int, seed: int = SEED) -> str:
    """n rules, one a line, sids 1..n."""
    rng = random.Random(seed * 100003 + n)
    out = [f"# {n} generated rules (bench/ids_rules.py {n}, seed {seed})"]
    for sid in range(1, n + 1):
        proto, dport = rng.choice([("tcp", "80"), ("tcp", "any"), ("tcp", "[80,443,8080]"),
                                   ("udp", "53"), ("udp", "any"), ("ip", "any")])
        src = rng.choice(["any", "any", "10.0.0.0/8", "![192.168.0.0/16,10.1.0.0/16]"])
        direction = rng.choice(["->", "->", "<>"])
        action = "drop" if rng.random() < 0.1 else "alert"
        sport = "any" if proto == "ip" else rng.choice(["any", "any", "1024:"])
        out.append(f'{action} {proto} {src} {sport} {direction} any {dport} '
                   f'(msg:"generated {sid}"; {_contents(rng)} sid:{sid}; rev:1;)')
    return "\n".join(out) + "\n"


def bench_json() -> dict[str, object]:
    variants = {str(n): {"args": ["--rules", "{dir}/ids.rules", "--stats-ms", "0"],
                         "files": {"ids.rules": rules(n)}} for n in COUNTS}
    return {"args": variants["10"]["args"], "files": variants["10"]["files"],
            "variants": variants}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, help="print this many rules")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--bench-json", action="store_true",
                    help="write nfs/ids/bench.json (variants 10, 100, 1000)")
    a = ap.parse_args(argv)
    if a.bench_json:
        path = ROOT / "nfs" / "ids" / "bench.json"
        path.write_text(json.dumps(bench_json(), indent=1) + "\n")
        print(f"wrote {path}")
        return 0
    if a.n is None or a.n < 1:
        ap.error("give N (at least 1) or --bench-json")
    sys.stdout.write(rules(a.n, a.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
