"""docs/sluiced.md, `sluiced -- --help` and `sluiced --defaults-json` (both
generated from the option table, src/mgr/options.c) agree, and sluiced does
what the page says: every option the help prints has a row with the help's
default, every option in the page is one sluiced takes, each stated range
is enforced to the unit, the range and default of each row are the table's,
and the defaults sluiced reports at run time are the page's.

sluiced reads its options before any start-up check, so all but the last
test run it without starting a node. An option is shown to be accepted by
giving it with a stray argument after it: sluiced then refuses only the
stray argument (`unexpected argument`), a check made after every option
was read and before anything starts."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, build_dir

from sluice.core import sluiced_defaults
from sluice.core.deploy import SLUICED_DEFAULTS
from sluice.runtime.client import Client

DOC = ROOT / "docs" / "sluiced.md"
STRAY = "stray-argument"

# Options whose value is neither a range nor a list of words: a valid value
# for each (a new such option must be added here).
FREE_FORM = {
    "--name": ["n", "abcdefghijklmnop"],  # 1 and 16 characters
    "--socket": ["/tmp/x.sock", "/" + "s" * 106],  # 107 characters
    "--chain": ["firewall,monitor,port:out"],
    "--port": ["in=net_null0,no-rx=1"],
}


def _sluiced(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(build_dir() / "src" / "mgr" / "sluiced"), "--", *args],
                          capture_output=True, text=True, timeout=30)


def help_options() -> dict[str, str | None]:
    """{option: its default as the help text says it, or None}.

    The default is the description's last parenthesis, split at ';': its
    parts that explain a special value ('0: never') are not the default,
    the last other part is ('default sluice' -> 'sluice'); with no other
    part, the special value is the default ('0: all TX ...' -> '0').
    '(repeat)' and no parenthesis: no default."""
    r = _sluiced("--help")
    assert r.returncode == 0 and r.stderr == "", r
    lines = r.stdout.splitlines()
    assert lines[0] == "usage: sluiced [EAL args] -- [options]", lines[0]
    assert lines[1].startswith("EAL args: DPDK's own"), lines[1]
    assert lines[2] == "options (-h, --help: this text):", lines[2]
    out: dict[str, str | None] = {}
    for line in lines[3:]:
        m = re.match(r"  (--\S+ \S+(?: / --\S+ \S+)?)\s+(.*)$", line)
        assert m, f"help line not understood: {line!r}"
        names = re.findall(r"--[a-z0-9-]+", m[1])
        paren = re.search(r"\(([^()]*)\)$", m[2])
        default = None
        if paren and paren[1] != "repeat":
            parts = [p.strip() for p in paren[1].split(";")]
            plain = [p for p in parts if not re.match(r"^\S+: ", p)]
            default = plain[-1] if plain else parts[0].split(":")[0]
            default = default.removeprefix("default ")
        for n in names:
            assert n not in out, f"{n} twice in the help"
            out[n] = default
    return out


def doc_rows(text: str | None = None) -> dict[str, dict[str, str]]:
    """{option: {values, default, what, shows}} from the option tables of
    docs/sluiced.md (the tables whose header starts '| option | values |')."""
    text = DOC.read_text() if text is None else text
    rows: dict[str, dict[str, str]] = {}
    in_table = False
    for line in text.splitlines():
        if line.startswith("| option | values | default |"):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if not in_table or line.startswith("|---"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        assert len(cells) == 5, f"option row without 5 cells: {line!r}"
        m = re.match(r"`(--[a-z0-9-]+)[ `]", cells[0])
        assert m, f"option cell not understood: {cells[0]!r}"
        assert m[1] not in rows, f"{m[1]} has two rows"
        rows[m[1]] = dict(zip(("values", "default", "what", "shows"), cells[1:], strict=True))
    return rows


def _range(values: str) -> tuple[int, int] | None:
    m = re.match(r"(\d+)\.\.(\d+)\b", values)
    return (int(m[1]), int(m[2])) if m else None


def _words(values: str) -> list[str] | None:
    if re.fullmatch(r"`[a-z]+`(?: \\\| `[a-z]+`)+", values):
        return re.findall(r"`([a-z]+)`", values)
    return None


def _accepted(opt: str, value: str) -> None:
    r = _sluiced(opt, value, STRAY)
    assert (r.returncode, r.stderr) == (1, f"sluiced: unexpected argument '{STRAY}'\n"), \
        (opt, value, r.stderr)


def _refused(opt: str, value: str, msg: str) -> None:
    r = _sluiced(opt, value, STRAY)
    assert (r.returncode, r.stderr) == (1, msg + "\n"), (opt, value, r.stderr)


def check_rows_cover_the_help(helped: dict[str, str | None],
                              rows: dict[str, dict[str, str]]) -> None:
    missing = sorted(set(helped) - set(rows))
    assert not missing, f"options sluiced -- --help prints that docs/sluiced.md lacks: {missing}"
    for opt, default in helped.items():
        doc_default = rows[opt]["default"].replace("`", "")
        assert doc_default == (default if default is not None else "none"), (opt, rows[opt])


def test_every_option_in_the_help_has_a_row_with_its_default() -> None:
    check_rows_cover_the_help(help_options(), doc_rows())


def test_every_option_in_the_doc_is_one_sluiced_takes() -> None:
    helped, rows = help_options(), doc_rows()
    unknown = sorted(set(rows) - set(helped))
    assert not unknown, f"docs/sluiced.md has rows for options sluiced does not print: {unknown}"
    kinds = {o: "range" if _range(r["values"]) else "words" if _words(r["values"]) else "free"
             for o, r in rows.items()}
    assert {o for o, k in kinds.items() if k == "free"} == set(FREE_FORM), kinds
    for opt, row in rows.items():
        if kinds[opt] == "range":
            lo, hi = _range(row["values"])  # type: ignore[misc]
            for v in (lo, hi):
                _accepted(opt, str(v))
        elif kinds[opt] == "words":
            for w in _words(row["values"]):  # type: ignore[union-attr]
                _accepted(opt, w)
        else:
            for v in FREE_FORM[opt]:
                _accepted(opt, v)


def test_each_stated_range_is_enforced() -> None:
    """One past each end of every range is refused, by a message naming the
    option and the range the page states."""
    checked = 0
    for opt, row in doc_rows().items():
        rng = _range(row["values"])
        if rng is None:
            continue
        lo, hi = rng
        for v in ([lo - 1] if lo > 0 else []) + [hi + 1]:
            _refused(opt, str(v), f"sluiced: {opt} '{v}' is not a number in {lo}..{hi}")
        _refused(opt, "12x", f"sluiced: {opt} '12x' is not a number in {lo}..{hi}")
        checked += 1
    assert checked >= 25, checked


def test_each_word_option_refuses_other_words() -> None:
    rows = doc_rows()
    expect = {
        "--mode": "sluiced: --mode 'bogus': use shared or poll",
        "--handoff": "sluiced: --handoff 'bogus': use direct or mgr",
        "--flow-lookup": "sluiced: --flow-lookup 'bogus': use off, cached or naive",
    }
    assert {o for o, r in rows.items() if _words(r["values"])} == set(expect)
    for opt, msg in expect.items():
        _refused(opt, "bogus", msg)


def test_the_other_stated_limits() -> None:
    rows = doc_rows()
    assert rows["--name"]["values"] == "1-16 characters of A-Z a-z 0-9 _ - ."
    for bad in ("a" * 17, "", "a/b"):
        _refused("--name", bad, f"sluiced: --name '{bad}' is not valid: "
                                "1-16 characters of A-Z a-z 0-9 _ - .")
    _accepted("--name", "A-z_0.9")
    assert rows["--socket"]["values"] == "at most 107 characters"
    _refused("--socket", "/" + "s" * 107, "sluiced: --socket path is longer than 107 characters")
    assert rows["--port"]["values"].startswith(
        "up to 32; NAME 1-31 characters of A-Z a-z 0-9 _ - ., each NAME once; DEVICE at "
        "most 255 characters")
    ports = [x for i in range(32) for x in ("--port", f"p{i}=net_null{i}")]
    r = _sluiced(*ports, STRAY)
    assert r.stderr == f"sluiced: unexpected argument '{STRAY}'\n", r.stderr
    r = _sluiced(*ports, "--port", "p32=net_null32", STRAY)
    assert (r.returncode, r.stderr) == (1, "sluiced: more than 32 ports\n")
    _accepted("--port", "p" * 31 + "=net_null0")
    _refused("--port", "p" * 32 + "=net_null0", f"sluiced: port name '{'p' * 32}' is not "
                                                 "valid: 1-31 characters of A-Z a-z 0-9 _ - .")
    _accepted("--port", "p=net_null0," + "x" * 245)  # a 255-character device
    _refused("--port", "p=net_null0," + "x" * 246,
             "sluiced: --port p: the device string is 256 characters, more than 255: shorten "
             "its paths or arguments")
    r = _sluiced("--port", "a=net_null0", "--port", "a=net_null1")
    assert (r.returncode, r.stderr) == (1, "sluiced: port name 'a' is given twice\n")
    assert rows["--ring-size"]["values"] == "64..1048576, a power of 2"
    _refused("--ring-size", "96", "sluiced: --ring-size 96 is not a power of 2: use 64 or 128")
    assert rows["--flow-capacity-v6"]["values"] == "64..67108864, at most `--flow-capacity`"
    r = _sluiced("--flow-capacity", "1000", "--flow-capacity-v6", "1001")
    assert r.returncode == 1 and r.stderr.startswith(
        "sluiced: --flow-capacity-v6 1001 is more than --flow-capacity 1000: "), r.stderr
    r = _sluiced("--nf-hang-ms", "100", "--backpressure-us", "100000")
    assert r.returncode == 1 and r.stderr.startswith(
        "sluiced: --nf-hang-ms 100 is not longer than --backpressure-us 100000 "), r.stderr


def test_a_row_left_out_or_a_wrong_default_fails_the_check() -> None:
    """The check is not vacuous: the page without the --tx-retry-us row, or
    with another default for it, fails it."""
    text, helped = DOC.read_text(), help_options()
    row = next(line for line in text.splitlines() if line.startswith("| `--tx-retry-us N` |"))
    with pytest.raises(AssertionError, match=r"lacks: \['--tx-retry-us'\]"):
        check_rows_cover_the_help(helped, doc_rows(text.replace(row + "\n", "")))
    wrong = row.replace("| 1000 |", "| 100 |")
    assert wrong != row
    with pytest.raises(AssertionError, match="--tx-retry-us"):
        check_rows_cover_the_help(helped, doc_rows(text.replace(row, wrong)))


# Defaults the page states that a running sluiced reports: option ->
# (method, path in its result). Each path is also what the row's "shows
# in" column names.
RUNTIME = {
    "--name": ("status", "node"),
    "--mode": ("status", "mode"),
    "--handoff": ("status", "handoff"),
    "--burst": ("status", "burst"),
    "--rx-burst": ("status", "rx_burst"),
    "--max-nfs": ("status", "max_nfs"),
    "--max-services": ("status", "max_services"),
    "--ring-size": ("status", "ring_size"),
    "--mbufs": ("status", "mbufs.size"),
    "--control-conns": ("status", "control.max_connections"),
    "--control-out-kb": ("status", "control.out_kb"),
    "--control-line-kb": ("status", "control.line_kb"),
    "--flow-lookup": ("stats", "flows.lookup"),
    "--flow-capacity": ("stats", "flows.capacity"),
    "--flow-timeout": ("stats", "flows.timeout_ms"),
}


def test_a_sluiced_with_no_options_reports_the_documented_defaults(node: str) -> None:
    """Started with nothing but --name (given: tests need a name of their
    own) and one port, so that the port's TX queues show too."""
    rows = doc_rows()
    sock = Path(f"/var/run/sluice/{node}.sock")
    p = subprocess.Popen([str(build_dir() / "src" / "mgr" / "sluiced"), "-l", "0,1", "--",
                          "--name", node, "--port", "out=net_null0,no-rx=1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:  # the socket file exists a moment before sluiced listens
            assert p.poll() is None, p.communicate()
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(str(sock))
                break
            except OSError:
                assert time.monotonic() < deadline, "sluiced did not listen on its socket"
                time.sleep(0.05)
        with Client(node, sock, timeout=5.0) as c:
            got = {"status": c.call("status"), "stats": c.call("stats")}
            ports = c.call("port.list")
            c.call("shutdown")
        for opt, (method, path) in RUNTIME.items():
            v = got[method]
            for k in path.split("."):
                v = v[k]
            want = rows[opt]["default"].replace("`", "")
            assert str(v) == (node if opt == "--name" else want), (opt, v, want)
            assert f"{method}.{path}" in rows[opt]["shows"], (opt, rows[opt]["shows"])
        # Derived and queue defaults.
        assert rows["--flow-capacity-v6"]["default"] == "a quarter of `--flow-capacity`"
        assert got["stats"]["flows"]["capacity_v6"] == got["stats"]["flows"]["capacity"] // 4
        # Queue 0 is sluiced's, then the NFs' 4 (net_null has them).
        assert rows["--nf-tx-queues"]["default"] == "4"
        assert [(x["name"], x["rx_queues"], x["tx_queues"]) for x in ports] == [("out", 1, 5)]
        # One packet pool, on the main lcore's socket (this machine has
        # one), which the port (a virtual device: the socket it was made
        # on) receives into.
        mbufs = got["status"]["mbufs"]
        assert [(x["name"], x["socket"], x["size"]) for x in mbufs["pools"]] == [
            (f"sl_{node[:16]}_pkts", 0, 65535)], mbufs
        assert mbufs["pools"][0]["in_use"] == mbufs["in_use"], mbufs
        assert [x["socket"] for x in ports] == [0], ports
        assert got["status"]["io_threads"] == 1  # two lcores: control + one I/O thread
        _, err = p.communicate(timeout=20)
        assert p.returncode == 0, err
        assert "shutting down: asked over the control socket" in err, err
    finally:
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=20)


@pytest.mark.parametrize("doc", ["README.md", "docs/architecture.md"])
def test_the_page_is_linked(doc: str) -> None:
    assert "docs/sluiced.md" in (ROOT / doc).read_text()


def test_help_anywhere_and_numbers_are_digits_only() -> None:
    """-h and --help print the list on stdout, before or after '--'; a
    number option takes digits only (strtoul alone would take ' 5', '+5'
    and '-1')."""
    exe = str(build_dir() / "src" / "mgr" / "sluiced")
    outs = [subprocess.run([exe, *argv], capture_output=True, text=True, timeout=30)
            for argv in (["--help"], ["-h"], ["--", "-h"], ["-l", "0", "--", "--help"])]
    assert {(r.returncode, r.stderr) for r in outs} == {(0, "")}
    assert len({r.stdout for r in outs}) == 1
    assert outs[0].stdout.startswith("usage: sluiced [EAL args] -- [options]\n")
    for bad in (" 5", "+5", "-1", "5 "):
        _refused("--max-nfs", bad, f"sluiced: --max-nfs '{bad}' is not a number in 1..4096")


def defaults_json(*argv: str) -> dict[str, dict[str, object]]:
    """{option: its entry} from `sluiced ARGV --defaults-json`."""
    r = subprocess.run([str(build_dir() / "src" / "mgr" / "sluiced"), *argv, "--defaults-json"],
                       capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stderr) == (0, ""), r
    doc = json.loads(r.stdout)
    assert doc["program"] == "sluiced", doc
    return {o["name"]: o for o in doc["options"]}


def test_defaults_json_anywhere_and_what_it_says() -> None:
    """Before or after '--', as --help; every entry says its type, default,
    range or values, and help."""
    got = [defaults_json(), defaults_json("--"), defaults_json("-l", "0", "--")]
    assert got[0] == got[1] == got[2]
    for opt, o in got[0].items():
        assert o["type"] in ("number", "choice", "text"), o
        assert isinstance(o["help"], str) and o["help"], o
        if o["type"] == "number":
            assert isinstance(o["min"], int) and isinstance(o["max"], int), o
            assert o["default"] is None or o["min"] <= o["default"] <= o["max"], o
        elif o["type"] == "choice":
            assert o["default"] in o["values"], o
        assert o["repeat"] is (opt == "--port"), o


def test_the_doc_and_the_help_agree_with_defaults_json() -> None:
    """The same options in the same order as --help, with the help's and
    the page's default, and the page's range or words."""
    opts, helped, rows = defaults_json(), help_options(), doc_rows()
    assert list(opts) == list(helped)
    for opt, o in opts.items():
        assert helped[opt] == o["default_text"], (opt, o)
        assert rows[opt]["default"].replace("`", "") == (o["default_text"] or "none"), opt
        if o["type"] == "number":
            assert _range(rows[opt]["values"]) == (o["min"], o["max"]), (opt, rows[opt])
        elif o["type"] == "choice":
            assert _words(rows[opt]["values"]) == o["values"], (opt, rows[opt])
        else:
            assert opt in FREE_FORM, opt
        if o["default"] is not None:
            assert o["default_text"] == str(o["default"]), o
    assert set(opts) == set(rows)


def test_the_python_package_takes_its_defaults_from_sluiced(tmp_path: Path) -> None:
    """SLUICED_DEFAULTS is read from --defaults-json; with no sluiced built
    it says to run `make build` (there is no copy to fall back on)."""
    opts = defaults_json()
    assert dict(SLUICED_DEFAULTS) == {k: opts["--" + k.replace("_", "-")]["default"]
                                      for k in sluiced_defaults.NODE_KEYS}
    assert SLUICED_DEFAULTS["ring_size"] == 4096 and SLUICED_DEFAULTS["handoff"] == "direct"
    with pytest.raises(sluiced_defaults.SluicedDefaultsError,
                       match=r"sluiced not found at .*: .*build it with `make build`"):
        sluiced_defaults.options(tmp_path / "sluiced")
