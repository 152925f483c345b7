"""Start-up failures that test_control.py does not cover (docs/sluiced.md,
"Start-up errors"): the DPDK file prefix taken by another running sluiced,
EAL finding no hugepages (a --huge-dir that is no hugetlbfs), and `sluice
up` run by another user than root. Each says what is wrong and what to do,
and leaves nothing behind (the ``node`` fixture checks the files)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml
from conftest import build_dir, deployment, prog
from test_demo import sluice_cmd

SLUICED = build_dir() / "src" / "mgr" / "sluiced"


def _said(r: subprocess.CompletedProcess) -> list[str]:
    return [ln for ln in r.stderr.splitlines() if ln.startswith("sluiced")]


def test_file_prefix_taken_by_a_running_sluiced(launch, node):
    run = launch(deployment(node, ports=[], nfs=[
        {"name": "f", "program": prog("forward"), "service": "f"}], chain=["f", "drop"]))
    other = node + "b"
    r = subprocess.run([str(SLUICED), "-l", "0,1", f"--file-prefix=sluice_{node}", "--",
                        "--name", other], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    # Said by sluiced before EAL starts: no EAL line, no "Success".
    assert r.stderr.splitlines() == [
        f"sluiced: DPDK file prefix sluice_{node} is in use by a running DPDK primary "
        f"process (it holds /var/run/dpdk/sluice_{node}/config): stop that process, or "
        f"start this one with another --name (or --file-prefix)"], r.stderr
    # The running node lost nothing.
    assert run.client.call("status")["n_nfs"] == 1
    assert Path(f"/var/run/dpdk/sluice_{node}/config").exists()
    assert not Path(f"/var/run/dpdk/sluice_{other}").exists()


def test_huge_dir_without_hugepages_is_explained_and_cleaned(node, tmp_path):
    empty = tmp_path / "not-hugetlbfs"
    empty.mkdir()
    r = subprocess.run([str(SLUICED), "-l", "0,1", "--huge-dir", str(empty), "--",
                        "--name", node], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1, r.stderr
    assert _said(r) == [
        "sluiced: DPDK EAL initialisation failed: it found no usable hugepages (a "
        "--huge-dir that is not a mounted hugetlbfs, or one with no free pages?); check "
        f"the EAL arguments before '--' (and that no other sluiced uses --name {node})"], \
        r.stderr
    # EAL had made /var/run/dpdk/sluice_NODE before it failed: removed.
    assert not Path(f"/var/run/dpdk/sluice_{node}").exists()


def test_sluice_up_not_root_says_so_before_anything(node):
    # A folder the user nobody can read, for the deployment file.
    d = Path(tempfile.mkdtemp(prefix="failpath-"))
    try:
        d.chmod(0o755)
        dep = d / "dep.yaml"
        dep.write_text(yaml.safe_dump(deployment(node, ports=[], nfs=[
            # a program any user may run, wherever the checkout is
            {"name": "f", "program": "/bin/true", "service": "f"}], chain=["f", "drop"])))
        dep.chmod(0o644)
        # nobody, keeping only the right to read any file: the checkout
        # (a fresh clone in a 0700 temporary folder, say) and its venv
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
                            *sluice_cmd(), "up", str(dep), "--log-dir", str(d / "logs")],
                           capture_output=True, text=True, timeout=60, cwd=d,
                           env={**os.environ, "SLUICE_BUILD_DIR": str(build_dir())})
        assert r.returncode == 1, r.stdout + r.stderr
        # Before the banner, and not "/var/run/dpdk/sluice_NODE: Permission denied".
        assert r.stdout == ""
        assert r.stderr == ("sluice up must run as root: sluiced maps hugepages and owns the "
                            "ports, and the NFs attach to its memory; run it with sudo\n")
        assert not (d / "logs").exists()
    finally:
        shutil.rmtree(d)
