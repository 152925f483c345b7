"""NFs in containers (docs/containers.md): the forward NF runs in a podman
(or docker) container of the sluice-nfs image as a DPDK secondary of the
host's sluiced; packets come out byte-exact and the counters are exact.

The image is built once per session (and only when the binaries changed:
its labels carry the SHA-256 of every input). Without a working container
runtime the tests fail, saying to run scripts/setup.sh.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import build_dir, deployment, port, prog, service, wait_until
from packets import mixed, read, write

from sluice.core.deploy import Deployment, load_deployment
from sluice.runtime import container
from sluice.runtime.client import Client, SluiceError
from sluice.runtime.container import ContainerError
from sluice.runtime.launch import Launcher, cleanup_node

IMAGE = container.DEFAULT_IMAGE
N = 2000


@pytest.fixture(scope="session")
def nf_image() -> str:
    """The NF image, built from this build folder if it is missing or stale."""
    try:
        rt = container.runtime()
    except ContainerError as e:
        pytest.fail(f"NFs in containers cannot be tested: {e}", pytrace=False)
    try:
        container.build_image(IMAGE, build_dir())
    except ContainerError as e:
        pytest.fail(f"cannot build the NF image with {rt}: {e}", pytrace=False)
    assert container.image_status(IMAGE, build_dir()) == "current"
    return IMAGE


def _rt(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    rt = container.runtime()
    return subprocess.run([rt, *args], capture_output=True, text=True, timeout=120,
                          env=container.runtime_env(rt), check=check)


@contextlib.contextmanager
def _sluiced(dep: dict[str, Any], tmp_path: Path) -> Iterator[tuple[Client, Launcher]]:
    """sluiced alone (as the launcher would start it), no NF, no chain."""
    run = Launcher(Deployment.from_dict(dep, base_dir=tmp_path), log_dir=tmp_path / "run",
                   build_dir=build_dir())
    run.run_dir.mkdir(parents=True, exist_ok=True)
    log = run.run_dir / "sluiced.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(run.sluiced_argv(), stdin=subprocess.DEVNULL, stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        run.client.wait_ready(15, check=lambda: None if proc.poll() is None else
                              pytest.fail(f"sluiced exited: {log.read_text()}"))
        yield run.client, run
    finally:
        with contextlib.suppress(Exception):
            run.client.call("shutdown")
        run.client.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(5)
        cleanup_node(run.node)


def _pcap_ports(tmp_path: Path, frames: list[bytes]) -> tuple[list[dict[str, str]], Path]:
    src = write(tmp_path / "in.pcap", frames)
    dst = tmp_path / "out.pcap"
    return [{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
            {"name": "out", "device": f"net_pcap1,tx_pcap={dst}"}], dst


def _check_exact(st: dict[str, Any], frames: list[bytes], out: list[bytes], svc: str) -> None:
    nbytes = sum(map(len, frames))
    assert len(out) == len(frames)
    assert out == frames  # byte-exact and in order (one path, FIFO rings)
    assert (port(st, "in")["rx_pkts"], port(st, "in")["rx_bytes"]) == (len(frames), nbytes)
    assert (port(st, "out")["tx_pkts"], port(st, "out")["tx_bytes"]) == (len(frames), nbytes)
    assert st["drops_total"] == 0
    s = service(st, svc)
    assert (s["rx_pkts"], s["tx_pkts"]) == (len(frames), len(frames))
    assert all(v == 0 for v in s["drops"].values())


def test_wrap_runs_forward_in_a_container_byte_exact(nf_image, node, tmp_path):
    """wrap(): the NF is a DPDK secondary inside the container, registered
    with its host pid, in its own network namespace and root; sluiced's
    shutdown stops it and the container is removed."""
    frames = mixed(N, flows=60, seed=7)
    ports, dst = _pcap_ports(tmp_path, frames)
    dep = deployment(node, ports, [{"name": "fwd", "program": "sluice-forward",
                                    "service": "forward"}], ["forward", "port:out"])
    with _sluiced(dep, tmp_path) as (client, run):
        argv = run.nf_argv(run.dep.nfs[0], Path(prog("forward")))
        cmd = container.wrap(argv, name="fwd", image=nf_image, node=node, workdir=tmp_path)
        rt = container.runtime()
        # podman: scripts/containers.conf's settings are in the command itself
        # (it runs without CONTAINERS_CONF in its environment).
        assert cmd[:cmd.index("run")] == ([rt, "--runtime", "runc", "--cgroup-manager",
                                           "cgroupfs", "--events-backend", "file"]
                                          if rt == "podman" else [rt])
        inner = cmd[cmd.index(nf_image) + 1:]
        assert inner[0] == "/usr/bin/sluice-forward"
        assert inner[-len(argv) + 1:] == argv[1:]
        # DPDK's drivers by -d: the mempool handlers first, in the order
        # sluiced's EAL loaded them from the host's driver folder.
        order = container.mempool_driver_order()
        assert "librte_mempool_ring.so" in {n.split(".so")[0] + ".so" for n in order}
        assert inner[1:2 * len(order) + 3] == [
            *(a for n in order for a in ("-d", f"{container.IMAGE_PMDS}/{n}")),
            "-d", container.IMAGE_PMDS]
        assert "--privileged" not in cmd
        name = container.container_name(node, "fwd")
        log = tmp_path / "fwd.log"
        with open(log, "wb") as f:
            nf = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f,
                                  stderr=subprocess.STDOUT)
        try:
            listed = wait_until(lambda: client.call("nf.list") or
                                (nf.poll() is not None and pytest.fail(
                                    f"the container exited ({nf.returncode}): "
                                    f"{log.read_text()}")),
                                60, "the containerized NF to register")
            pid = listed[0]["pid"]
            # The registered pid is the host's pid of the program in the container.
            assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0] == \
                b"/usr/bin/sluice-forward"
            assert container.nf_pid(node, "fwd") == pid
            # Own network namespace (--network none) and own root file system.
            assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
            root = Path(f"/proc/{pid}/root")
            assert not (root / prog("forward").lstrip("/")).exists()
            assert (root / "usr/bin/sluice-forward").exists()
            # The EAL's default driver folder is absent: no driver is loaded
            # in the image's directory order.
            assert not (root / str(container.pmd_dir()).lstrip("/")).exists()
            # No capabilities at all.
            caps = next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                        if line.startswith("CapEff:"))
            assert int(caps.split()[1], 16) == 0
            client.call("chain.set", hops=["forward", "port:out"])
            st = wait_until(lambda: (s := client.call("stats")) and
                            port(s, "out")["tx_pkts"] == N and s, 60, f"{N} packets out")
            client.call("shutdown")
            assert nf.wait(30) == 0, log.read_text()
        finally:
            if nf.poll() is None:
                nf.kill()
                nf.wait(10)
    _check_exact(st, frames, read(dst), "forward")
    # --rm: the container is gone once the NF exited.
    assert _rt("container", "inspect", name, check=False).returncode != 0


def test_an_nf_in_its_own_pid_namespace_is_refused(nf_image, node, tmp_path):
    """Without --pid host the NF names a pid of its own namespace (1), which
    on the host is another process: sluiced refuses the registration (it
    would watch, and at shutdown stop, that process) and says why."""
    frames = mixed(16, flows=4, seed=1)
    ports, _dst = _pcap_ports(tmp_path, frames)
    dep = deployment(node, ports, [{"name": "fwd", "program": "sluice-forward",
                                    "service": "forward"}], ["forward", "port:out"])
    with _sluiced(dep, tmp_path) as (client, run):
        argv = run.nf_argv(run.dep.nfs[0], Path(prog("forward")))
        cmd = container.wrap(argv, name="fwd", image=nf_image, node=node, workdir=tmp_path)
        i = cmd.index("--pid")
        assert cmd[i + 1] == "host"
        del cmd[i:i + 2]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        # (From its own pid namespace the NF cannot see sluiced's pid
        # either, so it gives up waiting instead of reading the answer.)
        assert p.returncode != 0, p.stderr
        assert client.call("nf.list") == []
        log = (run.run_dir / "sluiced.log").read_text()
        # pid 1 on the host: the VM's init, whose maps only root's ptrace
        # access may read; either way the registration is refused.
        assert re.search(r"registration refused: (pid 1 does not map \S+|cannot read "
                         r"/proc/1/maps \([^)]*\)): not the NF that asked \(another pid "
                         r"namespace\? run containers with --pid host\)", log), log


def test_wrap_refuses_a_missing_image(node):
    """The error names the image and says how to build it."""
    with pytest.raises(ContainerError) as e:
        container.wrap([prog("forward"), "--", "--node", node, "--service", "f"],
                       name="fwd", image="sluice-nfs:does-not-exist", node=node)
    assert str(e.value) == (
        f"container image 'sluice-nfs:does-not-exist' not found in {container.runtime()}: "
        "build it with scripts/build-image.sh --image sluice-nfs:does-not-exist (after ninja -C "
        "build)")


def test_wrap_refuses_an_image_with_other_binaries(nf_image, tmp_path, node):
    """An NF program that differs from the one in the image (rebuilt since)
    is refused: it could misread sluiced's shared memory layout."""
    other = tmp_path / "sluice-forward"
    shutil.copy2(prog("forward"), other)
    with open(other, "ab") as f:
        f.write(b"\0")
    with pytest.raises(ContainerError, match=r"holds another sluice-forward than .*"
                                             r"rebuild the image with scripts/build-image.sh"):
        container.wrap([str(other), "--", "--node", node], name="fwd", image=nf_image,
                       node=node)
    with pytest.raises(ContainerError, match="only the Sluice NFs built in build/nfs/"):
        container.wrap(["/bin/true"], name="x", image=nf_image, node=node)


def test_no_runtime_says_to_run_setup(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # neither podman nor docker
    monkeypatch.setattr(container, "_runtime_cache", None)
    with pytest.raises(ContainerError, match=r"no container runtime works: neither podman "
                                             r"nor docker is installed; install podman and "
                                             r"runc with scripts/setup.sh"):
        container.runtime()


def test_image_build_is_cached_and_reproducible(nf_image, tmp_path):
    """A second build with the same binaries does nothing; a forced build of
    the same inputs gives the very same image (same id); a build removes
    the NF images it left untagged (each would keep ~50 MB)."""
    assert container.build_image(nf_image, build_dir()) is False
    # An untagged image with the NF images' label: a tag moved off it.
    ctx = tmp_path / "ctx"
    ctx.mkdir()
    (ctx / "Containerfile").write_text("FROM scratch\nCOPY f /f\n")
    old = None
    for content in ("one", "two"):
        (ctx / "f").write_text(content)
        _rt("build", "-q", "--pull=never", "-f", str(ctx / "Containerfile"), "--label",
            f"{container.LABEL_INPUTS}=test", "-t", "sluice-nfs:dangling-check", str(ctx))
        old = old or _rt("image", "inspect", "--format", "{{.Id}}",
                         "sluice-nfs:dangling-check").stdout.strip()
    assert _rt("image", "inspect", old, check=False).returncode == 0  # untagged, kept
    tag = "sluice-nfs:repro-check"
    try:
        assert container.build_image(tag, build_dir(), force=True) is True
        assert _rt("image", "inspect", old, check=False).returncode != 0  # pruned
        ids = [_rt("image", "inspect", "--format", "{{.Id}}", t).stdout.strip()
               for t in (nf_image, tag)]
        assert ids[0] and ids[0] == ids[1]
    finally:
        _rt("rmi", tag, check=False)
        _rt("rmi", "sluice-nfs:dangling-check", check=False)
    assert container.image_exists(nf_image)


def _deployment_file(tmp_path: Path, node: str, frames: list[bytes], image: str) -> Path:
    src = write(tmp_path / "in.pcap", frames)
    path = tmp_path / "container.yaml"
    path.write_text(f"""\
node: {{name: {node}, mode: shared, cores: [0, 1]}}
ports:
  - {{name: in,  device: "net_pcap0,rx_pcap={src.name}"}}
  - {{name: out, device: "net_pcap1,tx_pcap=out.pcap"}}
nfs:
  - {{name: fwd, program: sluice-forward, service: forward, run: container, image: "{image}"}}
chain: [forward, "port:out"]
""")
    return path


def test_deployment_file_runs_forward_in_a_container(nf_image, node, tmp_path):
    """`run: container` in a deployment file: the launcher starts the NF
    with wrap(), knows it by its host pid, and the chain is byte-exact."""
    frames = mixed(N, flows=60, seed=11)
    run = Launcher(load_deployment(_deployment_file(tmp_path, node, frames, nf_image)),
                   log_dir=tmp_path / "run", build_dir=build_dir(), register_timeout=60)
    try:
        run.start()
        (nf,) = run.nfs
        assert nf.argv[0] == container.runtime() and nf_image in nf.argv
        listed = run.client.call("nf.list")
        assert [e["pid"] for e in listed] == [nf.pid] == [container.nf_pid(node, "fwd")]
        assert nf.pid != nf.popen.pid  # the NF, not the podman process
        st = wait_until(lambda: (s := run.client.call("stats")) and
                        port(s, "out")["tx_pkts"] == N and s, 60, f"{N} packets out")
    finally:
        run.stop()
    assert nf.exited() == 0, nf.tail()
    _check_exact(st, frames, read(tmp_path / "out.pcap"), "forward")


def test_deployment_with_a_missing_image_says_how_to_build_it(node, tmp_path):
    frames = mixed(10, flows=2)
    run = Launcher(load_deployment(_deployment_file(tmp_path, node, frames,
                                                    "sluice-nfs:not-built")),
                   log_dir=tmp_path / "run", build_dir=build_dir())
    with pytest.raises(SluiceError) as e:
        run.start()
    assert "container image 'sluice-nfs:not-built' not found" in str(e.value)
    assert "build it with scripts/build-image.sh --image sluice-nfs:not-built" in str(e.value)
    assert run.sluiced is not None and run.sluiced.exited() is not None  # stopped again


PROBE_FAILURES = ("Couldn't open", "failed to initialize", "probe failed")


@pytest.mark.parametrize("mount", [True, False], ids=["links-mounted", "links-hidden"])
def test_a_container_nf_probes_the_pcap_ports_like_a_host_nf(nf_image, node, tmp_path,
                                                             monkeypatch, mount):
    """sluiced opens its net_pcap ports' captures through links in a private
    /tmp/sl-PID-*/ folder, and an NF's EAL probes those ports with them.
    wrap() mounts the folder and the capture it points to (here outside the
    deployment folder) read-only, so the container NF's log has no probe
    failure, as a host NF's has none; without those mounts (the control
    case, which shows the test sees the failure) it has."""
    frames = mixed(200, flows=8, seed=5)
    (tmp_path / "captures").mkdir()
    src = write(tmp_path / "captures" / "in.pcap", frames)
    site = tmp_path / "site"
    site.mkdir()
    ports = [{"name": "in", "device": f"net_pcap0,rx_pcap={src}"},
             {"name": "out", "device": f"net_pcap1,tx_pcap={site / 'out.pcap'}"}]
    nfs = [{"name": "fwd", "program": "sluice-forward", "service": "forward",
            "run": "container", "image": nf_image},
           {"name": "host", "program": "sluice-forward", "service": "host-forward"}]
    if not mount:
        monkeypatch.setattr(container, "pcap_link_mounts", lambda rundir: [])
    run = Launcher(Deployment.from_dict(deployment(node, ports, nfs, ["forward", "port:out"]),
                                        base_dir=site),
                   log_dir=tmp_path / "run", build_dir=build_dir(), register_timeout=60)
    try:
        run.start()
        fwd, host = run.nfs
        links = sorted(Path("/tmp").glob(f"sl-{run.sluiced.pid}-*"))
        assert len(links) == 2  # one per net_pcap port
        mounted = [fwd.argv[i + 1] for i, a in enumerate(fwd.argv) if a == "-v"]
        if mount:
            assert [f"{d}:{d}:ro" for d in links] + [f"{src}:{src}:ro"] == \
                [m for m in mounted if m.startswith(("/tmp/sl-", str(src)))]
        st = wait_until(lambda: (s := run.client.call("stats")) and
                        port(s, "out")["tx_pkts"] == len(frames) and s, 60, "packets out")
    finally:
        run.stop()
    assert fwd.exited() == 0 and host.exited() == 0, fwd.tail() + host.tail()
    assert service(st, "forward")["rx_pkts"] == len(frames)
    host_log, fwd_log = host.log.read_text(), fwd.log.read_text()
    assert not [m for m in PROBE_FAILURES if m in host_log], host_log
    found = [m for m in PROBE_FAILURES if m in fwd_log]
    assert found == ([] if mount else list(PROBE_FAILURES)), fwd_log


def test_a_container_nf_killed_by_sigkill_is_reported_as_killed(nf_image, node, tmp_path):
    """kill -9 of a container NF's host pid: `podman run` exits with 137
    (128 + 9); the orchestrator says, as for a host NF, that the NF was
    killed by SIGKILL (not 'exited with status 137'), and restarts it."""
    from sluice.runtime.orchestrator import Orchestrator

    frames = mixed(200, flows=8, seed=9)
    src = write(tmp_path / "in.pcap", frames)
    dep = {**deployment(node, [{"name": "in", "device": f"net_pcap0,rx_pcap={src},infinite_rx=1"},
                               {"name": "out", "device": "net_null0,no-rx=1"}],
                        [{"name": "fwd", "program": "sluice-forward", "service": "forward",
                          "run": "container", "image": nf_image}], ["forward", "port:out"]),
           "restart": {"backoff_ms": 300}}
    run = Launcher(Deployment.from_dict(dep, base_dir=tmp_path), log_dir=tmp_path / "run",
                   build_dir=build_dir(), register_timeout=60)
    orch = None
    try:
        run.start()
        orch = Orchestrator(run, tick_s=0.05, serve=False)
        orch.start()
        (listed,) = run.client.call("nf.list")
        assert listed["pid"] == container.nf_pid(node, "fwd")
        os.kill(listed["pid"], signal.SIGKILL)

        def crashes() -> list[str]:
            return [f"{a['action']}: {a['text']}" for a in list(orch.actions)
                    if a["action"] == "crashed"]
        (crash,) = wait_until(crashes, 30, "the orchestrator to see the crash")
        assert re.fullmatch(r"crashed: fwd was killed by SIGKILL after \d+\.\d s; restarting "
                            r"in 0\.3 s \(failure 1 in a row\); see "
                            + re.escape(str(tmp_path / "run" / "fwd.log")), crash), crash
        wait_until(lambda: [e["pid"] for e in run.client.call("nf.list")] ==
                   [container.nf_pid(node, "fwd")] != [listed["pid"]], 60,
                   "the restarted container NF to register")
    finally:
        if orch is not None:
            orch.stop()
        run.stop()
