"""docs/nf-guide.md: the NF it shows is built with the command it shows
and does what it says in a real chain."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from conftest import ROOT, build_dir, deployment, port, wait_drained, wait_until
from packets import read, write
from scapy.all import IP, UDP, Ether, IPv6

GUIDE = ROOT / "docs" / "nf-guide.md"


def test_guide_example_matches_its_file():
    code = re.search(r"```c\n(.*?)```", GUIDE.read_text(), re.S).group(1)
    assert code in (ROOT / "docs" / "examples" / "ttl.c").read_text()


def test_guide_nf_builds_and_decrements_ttl(launch, node, tmp_path):
    """The first build: ttl.c in a folder of its own (a vendor's, outside
    the tree), SLUICE naming the tree, as the guide writes it."""
    sluice, cmd = re.search(r"```sh\nSLUICE=(\S+)\n(cc .*?)\n```", GUIDE.read_text(),
                            re.S).groups()
    assert sluice == "/path/to/sluice", sluice
    cmd = cmd.replace("\\\n", " ").replace("$SLUICE/build/", f"{build_dir()}/")
    assert "$SLUICE/include" in cmd, cmd
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    shutil.copy(ROOT / "docs" / "examples" / "ttl.c", vendor)
    r = subprocess.run(["sh", "-c", cmd], cwd=vendor, env={**os.environ, "SLUICE": str(ROOT)},
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{shlex.quote(cmd)}: {r.stderr}"
    _check_ttl_nf(launch, node, tmp_path, vendor / "sluice-ttl")


def _check_ttl_nf(launch, node, tmp_path: Path, program: Path) -> None:
    """Runs PROGRAM (ttl.c built) as service ttl of the chain in -> ttl ->
    out and checks what comes out, byte by byte."""
    frames = [bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", ttl=t) / UDP() / b"data")
              for t in (64, 2, 1, 0, 255)]
    frames.append(bytes(Ether() / IPv6(hlim=1) / UDP()))  # not IPv4: passes unchanged
    src, dst = write(tmp_path / "in.pcap", frames), tmp_path / "out.pcap"
    run = launch(deployment(
        node,
        ports=[{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
               {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}],
        nfs=[{"name": "ttl", "program": str(program), "service": "ttl"}],
        chain=["ttl", "port:out"]))
    wait_until(lambda: port(run.client.call("stats"), "in")["rx_pkts"] == len(frames), 20,
               "the capture to be read")
    st = wait_drained(run)
    assert st["nfs"][0]["drops"]["nf_verdict"] == 2  # TTL 1 and 0
    run.stop()
    # TTL 64, 2 and 255 come out one lower with the header checksum
    # recomputed (scapy computes it again once deleted), the rest of each
    # frame as it was; the IPv6 frame unchanged.
    want = []
    for f in frames[:2] + frames[4:5]:
        p = Ether(f)
        p[IP].ttl -= 1
        del p[IP].chksum
        want.append(bytes(p))
    assert [Ether(f)[IP].ttl for f in want] == [63, 1, 254]
    assert read(dst) == want + frames[5:]


def _headers() -> str:
    return "\n".join(p.read_text() for p in sorted((ROOT / "include" / "sluice").glob("*.h")))


def test_guide_names_only_what_the_headers_declare():
    names = set(re.findall(r"\b(sl_[a-z0-9_]+|SL_[A-Z0-9_]+)\b", GUIDE.read_text()))
    assert {"sl_nf_main", "sl_pkt_udp", "SL_ACCESS_ROUTE", "sl_stats_line_head"} <= names
    declared = set(re.findall(r"\b(sl_[a-z0-9_]+|SL_[A-Z0-9_]+)\b", _headers()))
    assert sorted(names - declared) == []


def test_guide_prototypes_are_the_headers():
    """The prototypes the guide quotes are the headers' own, word for word."""
    protos = re.findall(r"`((?:int|void) sl_[a-z_]+\(.*?\))`", GUIDE.read_text(), re.S)
    assert len(protos) == 4, protos  # table_create, opt_number, stats_line_head, read_file
    headers = " ".join(_headers().split())
    for proto in protos:
        assert " ".join(proto.split()) + ";" in headers, proto


# A program of the cross-layer API (sluice/flow.h, included alone): it
# compiles without DPDK's headers named, links every call from the
# installed libsluice.a and runs them without a sluiced (no NF: -EINVAL).
FLOW_CHECK = r"""
#include <stdio.h>
#include <string.h>
#include <sluice/flow.h>

int
main(void)
{
    struct sl_flow_match f;
    char err[128] = "";
    int (*of_pkt)(const struct rte_mbuf *, struct sl_flow_match *) = sl_flow_of_pkt;
    int rc = sl_flow_match_parse("proto=tcp dport=80", &f, err, sizeof(err));

    printf("%d %d [%s]\n", rc, f.exact, f.text);
    rc = sl_flow_match_parse("dport=http", &f, err, sizeof(err));
    printf("%d [%s]\n", rc, err);
    printf("%lld %lld %lld %lld %d\n", (long long)sl_skip_me(NULL, &f, 1),
           (long long)sl_request_me(NULL, &f, 1),
           (long long)sl_change_default(NULL, &f, 1, SL_DROP),
           (long long)sl_message(NULL, 1, "k", "v"), of_pkt != NULL);
    /* Too long or empty: refused before anything else (not cut). */
    char key[SL_MESSAGE_KEY_MAX + 2] = "", value[SL_MESSAGE_VALUE_MAX + 2] = "";
    memset(key, 'k', SL_MESSAGE_KEY_MAX + 1);
    memset(value, 'v', SL_MESSAGE_VALUE_MAX + 1);
    printf("%lld %lld %lld\n", (long long)sl_message(NULL, 1, key, "v"),
           (long long)sl_message(NULL, 1, "k", value), (long long)sl_message(NULL, 1, "", "v"));
    key[SL_MESSAGE_KEY_MAX] = value[SL_MESSAGE_VALUE_MAX] = '\0'; /* the longest: taken */
    printf("%lld\n", (long long)sl_message(NULL, 1, key, value));
    return 0;
}
"""


def test_installed_libsluice_builds_the_nf_out_of_tree(launch, node, tmp_path):
    """docs/nf-guide.md, "Build it against an installed libsluice": meson
    install (here into a DESTDIR) puts the headers, libsluice.a and
    libsluice.pc in place, and ttl.c, alone in a folder of its own, builds
    with pkg-config's flags only and runs in a chain."""
    section = GUIDE.read_text().split("## Build it against an installed libsluice\n")[1]
    install, cmd = re.search(r"```sh\n(meson install .*?)\n(cc .*?)\n```", section, re.S).groups()
    assert install.startswith("meson install -C build"), install

    build = build_dir()
    opts = {o["name"]: o["value"]
            for o in json.loads((build / "meson-info" / "intro-buildoptions.json").read_text())}
    destdir = tmp_path / "destdir"
    # --no-rebuild: install what `make build` built; never reconfigure.
    r = subprocess.run(["meson", "install", "-C", str(build), "--destdir", str(destdir),
                        "--no-rebuild"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr

    def staged(d: str) -> Path:
        return destdir / Path(opts["prefix"], d).relative_to("/")

    headers = sorted(h.name for h in (staged(opts["includedir"]) / "sluice").glob("*.h"))
    assert headers == sorted(h.name for h in (ROOT / "include" / "sluice").glob("*.h"))
    assert (staged(opts["libdir"]) / "libsluice.a").is_file()
    pcdir = staged(opts["libdir"]) / "pkgconfig"
    pc = pcdir / "libsluice.pc"
    assert pc.is_file(), f"meson install put no libsluice.pc in {pcdir}"
    # The staged .pc still names the real prefix: pkg-config's flags then
    # find no sluice/nf.h. The guide's block rewrites that one line (why
    # not PKG_CONFIG_SYSROOT_DIR or --define-prefix: the guide says).
    text = pc.read_text()
    assert f"prefix={opts['prefix']}\n" in text, text
    relocate = re.search(r"```sh\n(PC=.*?)\n```", section, re.S).group(1)
    assert opts["prefix"] == "/usr/local" and opts["libdir"] == "lib/x86_64-linux-gnu", (
        "the guide's relocation block names /usr/local and lib/x86_64-linux-gnu", opts)
    relocate = relocate.replace("DIR/", f"{destdir}/")
    r = subprocess.run(["sh", "-c", f"set -e\n{relocate}\npkg-config --cflags --libs libsluice"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, f"{relocate}: {r.stderr}"
    assert pc.read_text() == text.replace(f"prefix={opts['prefix']}\n",
                                          f"prefix={staged('.')}\n", 1)
    flags = r.stdout
    env = {**os.environ, "PKG_CONFIG_PATH": str(pcdir)}
    assert str(ROOT) not in flags and f"-I{staged(opts['includedir'])} " in flags, flags

    nf = tmp_path / "vendor"
    nf.mkdir()
    shutil.copy(ROOT / "docs" / "examples" / "ttl.c", nf)
    cmd = cmd.replace("\\\n", " ")
    r = subprocess.run(["sh", "-c", cmd], cwd=nf, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, f"{shlex.quote(cmd)}: {r.stderr}"

    (nf / "flow_check.c").write_text(FLOW_CHECK)
    check = cmd.replace("ttl.c", "flow_check.c").replace("sluice-ttl", "flow-check")
    r = subprocess.run(["sh", "-c", check.replace(" -O2 ", " -O2 -Wall -Wextra -Werror ")],
                       cwd=nf, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"{shlex.quote(check)}: {r.stderr}"
    r = subprocess.run([nf / "flow-check"], capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout) == (0, "0 0 [proto=tcp dport=80]\n"
                                           "-22 ['dport': 'http' is not a valid port or"
                                           " port range (0-65535, 'LO-HI' or 'any')]\n"
                                           "-22 -22 -22 -22 1\n"
                                           "-7 -7 -22\n-22\n"), r.stdout + r.stderr

    _check_ttl_nf(launch, node, tmp_path, nf / "sluice-ttl")
