"""NFs in containers: the image, the runtime and the `run` command line.

An NF in a container is the same program, started with the same argv, as a
DPDK secondary process of the node's ``sluiced``. ``wrap`` turns that argv
into a ``podman run`` (or ``docker run``) command that shares with the host
exactly what a secondary needs (docs/containers.md says why each is there):

- the hugetlbfs mounts (the packet memory: same files, same paths);
- ``/var/run/dpdk/<prefix>`` of the node (DPDK's config, the memseg
  list files and the multi-process sockets);
- the host's PID namespace (``--pid host``): the NF registers with
  ``getpid()`` and sluiced watches that pid with ``pidfd_open`` and signals
  it at shutdown, so the pid must be the host's;
- read-only, sluiced's private links to its ``net_pcap`` ports' captures
  (``/tmp/sl-PID-*/``) and the captures they point to: the NF's EAL probes
  those ports with them;

and nothing else: ``--network none``, no capabilities (``--cap-drop all``),
not privileged.

The image (``sluice-nfs:latest``) is built ``FROM scratch`` from a root
file system staged here: the NF programs of the build folder
(``build/nfs/*/sluice-*``), the shared libraries they need (found with
``ldd``), DPDK's PMD folder (every driver the host's sluiced loads, so the
driver registration order, and with it the mempool ops indexes, match) and
the libraries those need. No registry is involved. The image carries labels
with the SHA-256 of every input, so ``build_image`` rebuilds only when a
binary changed, and ``check_image`` refuses an image whose NF program differs
from the build folder's (an NF from another tree would misread the shared
memory layout).

Command line::

    python -m sluice.container build [--image NAME] [--build-dir DIR] [--force]
    python -m sluice.container check [--image NAME] [PROGRAM...]
    python -m sluice.container runtime

(``scripts/build-image.sh`` runs the first.)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.deploy import container_program_problem, default_build_dir, did_you_mean, repo_root
from .client import SluiceError

DEFAULT_IMAGE = "sluice-nfs:latest"
IMAGE_BIN = "/usr/bin"  # where the NF programs are in the image
# DPDK's drivers in the image: not at the EAL's default folder, so the EAL
# loads only what wrap() names with -d, in the order it names them.
IMAGE_PMDS = "/usr/lib/sluice/pmds"
# Driver classes an NF may need: buses (vdev: the node's virtual ports),
# mempool handlers (the packet pool's), NIC and virtual port drivers (NFs
# transmit to ports themselves), and their common code.
PMD_CLASSES = ("bus", "common", "mempool", "net")
LABEL_INPUTS = "org.sluice.inputs"  # SHA-256 over every staged file
IMAGE_FORMAT = 2  # bumped when the image or its labels change meaning
LABEL_PROGRAMS = "org.sluice.programs"  # JSON {program: sha256}
LABEL_MANIFEST = "org.sluice.manifest"  # JSON [[host file, size, mtime_ns], ...]
LABEL_MEMPOOLS = "org.sluice.mempools"  # JSON [mempool driver, ...] in load order
BUILD_HINT = "scripts/build-image.sh"
SETUP_HINT = "scripts/setup.sh"
DPDK_RUN_DIR = Path("/var/run/dpdk")
# Set in every NF container to its name: how the host finds the NF's pid.
ENV_NAME = "SLUICE_CONTAINER"

_NAME_CLEAN = re.compile(r"[^A-Za-z0-9_.-]")


class ContainerError(SluiceError):
    """A container could not be built or run; the message says what to do."""


# -- runtime ------------------------------------------------------------------------

def containers_conf() -> Path:
    """The containers.conf the project ships (or $SLUICE_CONTAINERS_CONF)."""
    env = os.environ.get("SLUICE_CONTAINERS_CONF")
    return Path(env) if env else repo_root() / "scripts" / "containers.conf"


def runtime_env(rt: str | None = None) -> dict[str, str]:
    """The environment to run ``rt`` with: podman gets the project's
    containers.conf through CONTAINERS_CONF (the system's is left alone)."""
    env = dict(os.environ)
    if (rt or runtime()) == "podman":
        env["CONTAINERS_CONF"] = str(containers_conf())
    return env


_runtime_cache: str | None = None


def _works(argv: list[str], env: dict[str, str] | None = None) -> bool:
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env=env, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def runtime(refresh: bool = False) -> str:
    """``docker`` when a docker daemon answers, else ``podman`` when it runs
    (with the project's containers.conf); $SLUICE_CONTAINER_RUNTIME forces
    one. Raises ContainerError saying what to install otherwise."""
    global _runtime_cache
    if _runtime_cache is not None and not refresh:
        return _runtime_cache
    forced = os.environ.get("SLUICE_CONTAINER_RUNTIME")
    if forced and forced not in ("podman", "docker"):
        raise ContainerError(f"SLUICE_CONTAINER_RUNTIME='{forced}': use podman or docker")
    found: str | None = None
    if forced in (None, "docker") and shutil.which("docker") and \
            _works(["docker", "version", "--format", "{{.Server.Version}}"]):
        found = "docker"
    if found is None and forced in (None, "podman") and shutil.which("podman"):
        env = dict(os.environ, CONTAINERS_CONF=str(containers_conf()))
        if not containers_conf().is_file():
            raise ContainerError(f"{containers_conf()} is missing: podman needs the project's "
                                 f"containers.conf (runc, cgroupfs); restore it from git")
        if _works(["podman", "--version"], env) and shutil.which("runc"):
            found = "podman"
    if found is None:
        if forced == "docker":
            why = "SLUICE_CONTAINER_RUNTIME=docker but no docker daemon answers"
        elif shutil.which("podman") and not shutil.which("runc"):
            why = "podman is installed but runc is not"
        elif shutil.which("docker"):
            why = "the docker client is installed but no docker daemon answers, and podman " \
                  "is not installed"
        else:
            why = "neither podman nor docker is installed"
        raise ContainerError(f"no container runtime works: {why}; install podman and runc "
                             f"with {SETUP_HINT} (or apt-get install podman runc), or start a "
                             f"docker daemon")
    _runtime_cache = found
    return found


def _run(argv: list[str], rt: str, timeout: float = 600.0,
         check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           env=runtime_env(rt), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ContainerError(f"`{' '.join(argv)}` did not finish within {timeout:g} s") \
            from None
    if check and r.returncode != 0:
        err = (r.stderr or r.stdout).strip().splitlines()
        raise ContainerError(f"`{' '.join(argv[:3])} ...` failed (status {r.returncode}): "
                             f"{err[-1] if err else 'no message'}")
    return r


# -- the image ----------------------------------------------------------------------

def image_labels(image: str = DEFAULT_IMAGE) -> dict[str, str] | None:
    """The image's labels, or None when the runtime has no such image."""
    rt = runtime()
    r = _run([rt, "image", "inspect", "--format", "{{json .Config.Labels}}", image], rt,
             timeout=60, check=False)
    if r.returncode != 0:
        return None
    try:
        labels = json.loads(r.stdout.strip() or "null")
    except json.JSONDecodeError:
        return {}
    return labels if isinstance(labels, dict) else {}


def image_exists(image: str = DEFAULT_IMAGE) -> bool:
    return image_labels(image) is not None


_sha_cache: dict[tuple[str, int, int, int], str] = {}


def _sha256(path: Path) -> str:
    """SHA-256 of a file (remembered while its inode, size and time stay)."""
    st = os.stat(path)
    key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
    if key not in _sha_cache:
        _sha_cache[key] = _sha256_read(path)
    return _sha_cache[key]


def _sha256_read(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def nf_programs(build_dir: Path | None = None) -> list[Path]:
    """The NF programs of a build folder: BUILD/nfs/*/sluice-*."""
    bdir = Path(build_dir) if build_dir else default_build_dir()
    return sorted(p for p in bdir.glob("nfs/*/sluice-*")
                  if p.is_file() and os.access(p, os.X_OK))


def pmd_dir() -> Path | None:
    """DPDK's driver folder (the EAL loads every driver in it at start)."""
    try:
        r = subprocess.run(["pkg-config", "--variable=pmdsdir", "libdpdk"],
                           capture_output=True, text=True, timeout=10)
        if r.returncode == 0 and r.stdout.strip() and Path(r.stdout.strip()).is_dir():
            return Path(r.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    found = sorted(Path("/usr/lib").glob("*/dpdk/pmds-*")) + \
        sorted(Path("/usr/lib64").glob("dpdk/pmds-*"))
    return found[-1] if found else None


def _eal_loads(name: str, pmds: Path) -> bool:
    """Whether the EAL loads this file of its driver folder (it takes names
    ending in .so and in .so.<ABI>, e.g. .so.23.0 in pmds-23.0)."""
    abi = pmds.name.split("-", 1)[1] if "-" in pmds.name else ""
    return name.endswith(".so") or bool(abi and name.endswith(f".so.{abi}"))


def mempool_driver_order(pmds: Path | None = None) -> list[str]:
    """The mempool drivers of the host's driver folder in the order the EAL
    (of sluiced) loads them: directory order, first name of each library.
    Each registers its mempool handlers in a per-process table whose index
    is stored in the shared pool, so an NF must load them in this order."""
    pmds = pmds or pmd_dir()
    if pmds is None:
        return []
    order: list[str] = []
    seen: set[str] = set()
    for name in os.listdir(pmds):  # readdir order, as the EAL
        if not name.startswith("librte_mempool_") or not _eal_loads(name, pmds):
            continue
        real = os.path.realpath(pmds / name)
        if real not in seen:
            seen.add(real)
            order.append(name)
    return order


def _ldd(paths: Iterable[Path]) -> set[str]:
    """Every shared library the given ELF files load (absolute paths)."""
    libs: set[str] = set()
    for p in paths:
        if p.is_symlink() or not p.is_file():
            continue
        r = subprocess.run(["ldd", str(p)], capture_output=True, text=True, timeout=60)
        for line in r.stdout.splitlines():
            line = line.strip()
            if "=> not found" in line:
                raise ContainerError(f"{p} needs {line.split()[0]}, which is not installed "
                                     f"on this machine; run {SETUP_HINT}")
            m = re.match(r"(?:\S+ => )?(/\S+) \(0x", line)
            if m:
                libs.add(m.group(1))
    return libs


def _canonical_dir(path: str) -> str:
    """``path`` with its folder's symlinks resolved (/lib/x.so -> /usr/lib/x.so)
    and the file name kept (it may itself be a symlink, staged as one)."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


@dataclass
class Rootfs:
    """What the image holds: files (image path -> host path), symlinks
    (image path -> link text)."""

    files: dict[str, Path] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    programs: dict[str, str] = field(default_factory=dict)  # name -> sha256
    pmds: str = ""  # the host's driver folder, staged at IMAGE_PMDS

    def image_path(self, host: str) -> str:
        if self.pmds and os.path.dirname(host) == self.pmds:
            return f"{IMAGE_PMDS}/{os.path.basename(host)}"
        return host

    def add_host(self, path: str) -> None:
        """Adds a host file at its own (canonical) path (the driver folder's
        at IMAGE_PMDS), symlinks as symlinks, each target too."""
        seen = 0
        p = _canonical_dir(path)
        while True:
            dst = self.image_path(p)
            if dst in self.files or dst in self.links:
                return
            if os.path.islink(p):
                nxt = _canonical_dir(os.path.join(os.path.dirname(p), os.readlink(p)))
                tgt = self.image_path(nxt)
                self.links[dst] = os.path.relpath(tgt, os.path.dirname(dst))
                p = nxt
                seen += 1
                if seen > 40:
                    raise ContainerError(f"symlink loop at {path}")
                continue
            if not os.path.isfile(p):
                raise ContainerError(f"{path} ({p}) is not a file")
            self.files[dst] = Path(p)
            return

    def digest(self) -> str:
        h = hashlib.sha256(f"sluice-nfs image format {IMAGE_FORMAT}\n".encode())
        for dst in sorted(self.files):
            h.update(f"F {dst} {_sha256(self.files[dst])} "
                     f"{os.stat(self.files[dst]).st_mode & 0o7777:o}\n".encode())
        for dst in sorted(self.links):
            h.update(f"L {dst} {self.links[dst]}\n".encode())
        h.update((repo_root() / "containers" / "Containerfile").read_bytes())
        h.update(f"M {' '.join(mempool_driver_order(Path(self.pmds)))}\n".encode())
        return h.hexdigest()


def image_rootfs(build_dir: Path | None = None) -> Rootfs:
    """Collects what the image holds (reads the host; writes nothing)."""
    bdir = Path(build_dir) if build_dir else default_build_dir()
    progs = nf_programs(bdir)
    if not progs:
        raise ContainerError(f"no NF programs in {bdir}/nfs/*/: build them first "
                             f"(ninja -C {bdir})")
    pmds = pmd_dir()
    if pmds is None:
        raise ContainerError(f"DPDK's driver folder (…/dpdk/pmds-*) was not found: "
                             f"install dpdk (run {SETUP_HINT})")
    fs = Rootfs(pmds=os.path.realpath(pmds))
    for p in progs:
        fs.files[f"{IMAGE_BIN}/{p.name}"] = p
        fs.programs[p.name] = _sha256(p)
    pmd_entries = sorted(e for e in pmds.iterdir()
                         if e.name.removeprefix("librte_").split("_", 1)[0] in PMD_CLASSES)
    for e in pmd_entries:
        fs.add_host(str(e))
    libs = _ldd([*progs, *(e for e in pmd_entries if not e.is_symlink())])
    # glibc loads libgcc_s on pthread_cancel (DPDK cancels its threads at exit).
    for extra in ("libgcc_s.so.1",):
        for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64"):
            if os.path.exists(os.path.join(d, extra)):
                libs.add(os.path.join(d, extra))
                break
    for lib in sorted(libs):
        fs.add_host(lib)
    # Merged /usr as on the host (Debian 12): /lib and /lib64 are links.
    for d in ("/lib", "/lib64"):
        if os.path.islink(d):
            fs.links[d] = os.readlink(d)
    return fs


def stage(fs: Rootfs, dest: Path) -> Path:
    """Writes the root file system into ``dest/rootfs`` (replaced)."""
    root = dest / "rootfs"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for d in ("tmp", "var/run/dpdk", "dev/hugepages", "etc"):
        (root / d).mkdir(parents=True, exist_ok=True)
    (root / "tmp").chmod(0o1777)
    for dst, src in sorted(fs.files.items()):
        out = root / dst.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, out)
    for dst, target in sorted(fs.links.items()):
        out = root / dst.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_symlink() or out.exists():
            continue
        os.symlink(target, out)
    return root


def image_status(image: str = DEFAULT_IMAGE, build_dir: Path | None = None,
                 fs: Rootfs | None = None) -> str:
    """'current', 'stale' (built from other inputs) or 'missing'."""
    labels = image_labels(image)
    if labels is None:
        return "missing"
    fs = fs or image_rootfs(build_dir)
    return "current" if labels.get(LABEL_INPUTS) == fs.digest() else "stale"


def build_image(image: str = DEFAULT_IMAGE, build_dir: Path | None = None,
                force: bool = False, say: Callable[[str], None] | None = None) -> bool:
    """Builds the NF image unless it is current (same inputs); returns
    whether it built. Reproducible: file times and the creation time are
    the epoch (``--timestamp 0``), so the same inputs give the same image."""
    say = say or (lambda _m: None)
    rt = runtime()
    fs = image_rootfs(build_dir)
    digest = fs.digest()
    labels = image_labels(image)

    def js(v: object) -> str:
        return json.dumps(v, sort_keys=True, separators=(",", ":"))

    # The manifest (sizes and times of the inputs) is a label of the
    # image, so it is part of what the image is: a relinked binary with
    # the same bytes still makes a new image, or a forced build of "the
    # same inputs" would give another image id than the cached one.
    manifest = [[str(src), os.stat(src).st_size, os.stat(src).st_mtime_ns]
                for _dst, src in sorted(fs.files.items())]
    if (not force and labels is not None and labels.get(LABEL_INPUTS) == digest
            and labels.get(LABEL_MANIFEST) == js(manifest)):
        say(f"{image} is up to date (inputs {digest[:12]})")
        return False
    containerfile = repo_root() / "containers" / "Containerfile"
    with tempfile.TemporaryDirectory(prefix="sluice-image-") as tmp:
        stage(fs, Path(tmp))
        say(f"staged {len(fs.files)} files and {len(fs.links)} symlinks; building {image} "
            f"with {rt}")
        argv = [rt, "build", "-f", str(containerfile), "-t", image,
                "--label", f"{LABEL_INPUTS}={digest}",
                "--label", f"{LABEL_PROGRAMS}={js(fs.programs)}",
                "--label", f"{LABEL_MANIFEST}={js(manifest)}",
                "--label", f"{LABEL_MEMPOOLS}={js(mempool_driver_order(Path(fs.pmds)))}"]
        if rt == "podman":
            argv += ["--timestamp", "0", "--pull=never"]
        argv.append(tmp)
        _run(argv, rt, timeout=900)
    # The image this tag named before is now untagged: remove it (and any
    # other untagged NF image), or every rebuild leaves ~50 MB behind.
    subprocess.run([rt, "image", "prune", "-f", "--filter", f"label={LABEL_INPUTS}"],
                   capture_output=True, timeout=120, check=False)
    say(f"built {image} (inputs {digest[:12]}): {', '.join(sorted(fs.programs))}")
    return True


def check_image(image: str, programs: Iterable[Path], who: str = "") -> None:
    """Raises ContainerError unless ``image`` exists, holds each program
    exactly as built on the host (same SHA-256), and its libraries and
    drivers are the host's as they are now (same size and time of every
    file it was built from, same mempool driver order): an NF must match
    sluiced's DPDK exactly. Takes milliseconds (no ldd, no hashing of
    libraries); ``image_status`` is the full check. A program given by
    name only (the launcher found none on the host) must be in the image;
    ``who`` starts the message that says it is not (e.g. "NF 'fwd': ")."""
    labels = image_labels(image)
    build_hint = f"{BUILD_HINT}{'' if image == DEFAULT_IMAGE else ' --image ' + image}"
    if labels is None:
        raise ContainerError(f"container image '{image}' not found in {runtime()}: build it "
                             f"with {build_hint} (after ninja -C build)")

    def label(key: str, default: object) -> object:
        try:
            return json.loads(labels.get(key, "null")) or default
        except json.JSONDecodeError:
            return default

    held = label(LABEL_PROGRAMS, {})
    assert isinstance(held, dict)
    for p in (Path(p) for p in programs):
        if p.name not in held:
            built = [b.name for b in nf_programs()]
            if p.name not in built and not (p.is_absolute() and p.is_file()):
                # Not built either: rebuilding the image would not help.
                pre = "sluice-"
                short = [b.removeprefix(pre) for b in built]
                raise ContainerError(f"{who}there is no NF program {p.name}: neither the "
                                     f"container image '{image}' nor "
                                     f"{default_build_dir()}/nfs/ has it (the NFs are "
                                     f"{', '.join(built) or 'not built'}): fix its program"
                                     f"{did_you_mean(p.name.removeprefix(pre), short, pre)}")
            raise ContainerError(f"container image '{image}' has no {p.name} (it holds "
                                 f"{', '.join(sorted(held)) or 'no Sluice NF'}): NFs in "
                                 f"containers must be built in build/nfs/; rebuild the "
                                 f"image with {build_hint}")
        if p.is_absolute() and p.is_file() and held[p.name] != _sha256(p):
            raise ContainerError(f"container image '{image}' holds another {p.name} than "
                                 f"{p} (rebuilt since?): rebuild the image with {build_hint}")
    manifest = label(LABEL_MANIFEST, [])
    assert isinstance(manifest, list)
    for src, size, mtime in manifest:
        if src.startswith(str(repo_root())) or "/nfs/" in src:
            continue  # the NF programs: checked above by content
        try:
            st = os.stat(src)
        except OSError:
            st = None
        if st is None or (st.st_size, st.st_mtime_ns) != (size, mtime):
            raise ContainerError(f"container image '{image}' was built with another {src} "
                                 f"than this host's (DPDK or a library was upgraded?): "
                                 f"rebuild it with {build_hint}")
    if label(LABEL_MEMPOOLS, []) != mempool_driver_order():
        raise ContainerError(f"container image '{image}' was built when DPDK's mempool "
                             f"drivers were listed in another order: rebuild it with "
                             f"{build_hint}")


# -- running ------------------------------------------------------------------------

def _conf_values() -> dict[str, Any]:
    """The keys of the project's containers.conf (a TOML file)."""
    try:
        import tomllib  # Python 3.11
    except ImportError:  # pragma: no cover (3.10)
        return {}
    try:
        with open(containers_conf(), "rb") as f:
            data = tomllib.load(f)
    except (OSError, ValueError):
        return {}
    return {**data.get("engine", {}), **data.get("containers", {})}


def podman_global_options() -> list[str]:
    """containers.conf's engine settings as podman options."""
    c = _conf_values()
    out = []
    for key, opt in (("runtime", "--runtime"), ("cgroup_manager", "--cgroup-manager"),
                     ("events_logger", "--events-backend")):
        if c.get(key):
            out += [opt, str(c[key])]
    return out


def podman_run_options() -> list[str]:
    """containers.conf's container settings as `podman run` options."""
    return [a for u in _conf_values().get("default_ulimits", []) for a in ("--ulimit", u)]


def container_name(node: str, name: str) -> str:
    """The container's name: sluice-NODE-NAME (NAME: the NF entry, with
    the replica number, e.g. fwd.2)."""
    return _NAME_CLEAN.sub("_", f"sluice-{node}-{name}")


def _file_prefix(argv: list[str], node: str) -> str:
    eal = argv[1:argv.index("--")] if "--" in argv else argv[1:]
    for i, a in enumerate(eal):
        if a.startswith("--file-prefix="):
            return a.split("=", 1)[1]
        if a == "--file-prefix" and i + 1 < len(eal):
            return eal[i + 1]
    return f"sluice_{node}"


def hugetlbfs_mounts() -> list[str]:
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    return sorted({f[1] for f in (line.split() for line in lines)
                   if len(f) > 2 and f[2] == "hugetlbfs"})


_PCAP_DIR_RE = re.compile(r"^sl-(\d+)-[A-Za-z0-9]{6}$")


def pcap_link_mounts(rundir: Path, tmp: Path = Path("/tmp")) -> list[str]:
    """``-v`` options that show a container NF the captures of the node's
    ``net_pcap`` ports as a host NF sees them. sluiced opens each capture
    through a link in a private folder ``/tmp/sl-PID-XXXXXX/`` (docs/
    deployment.md), and an NF's EAL probes the port with those paths: without
    the folder it fails (``open_single_rx_pcap(): Couldn't open ...``, ``EAL:
    Bus (vdev) probe failed.``). The folders of the node's sluiced (the PID
    whose memory map holds ``rundir``) are mounted read-only at the same
    path, and so is each file a link points to (the ``rx_pcap`` captures;
    a started port's ``tx_pcap`` link points to /dev/null). Paths with a
    ':' cannot be said in ``-v`` and are left out (that probe then fails as
    before; the NF works all the same)."""
    want = f" {os.path.realpath(rundir)}/"  # /var/run is /run in the maps
    out: list[str] = []
    files: set[str] = set()
    try:
        entries = sorted(tmp.iterdir())
    except OSError:
        return []
    maps: dict[str, bool] = {}
    for d in entries:
        m = _PCAP_DIR_RE.match(d.name)
        if m is None or not d.is_dir() or d.is_symlink():
            continue
        pid = m.group(1)
        if pid not in maps:
            try:
                maps[pid] = want in Path(f"/proc/{pid}/maps").read_text(errors="replace")
            except OSError:
                maps[pid] = False
        if not maps[pid] or ":" in str(d):
            continue
        out += ["-v", f"{d}:{d}:ro"]
        try:
            links = sorted(d.iterdir())
        except OSError:
            continue
        for link in links:
            if not link.is_symlink():
                continue
            target = os.path.realpath(link)
            if target.startswith("/dev/") or ":" in target or not os.path.isfile(target):
                continue
            files.add(target)
    for f in sorted(files):
        out += ["-v", f"{f}:{f}:ro"]
    return out


def wrap(argv: list[str], *, name: str, image: str = DEFAULT_IMAGE, node: str,
         workdir: str | Path | None = None, check: bool = True) -> list[str]:
    """The command line that runs the NF ``argv`` in a container of
    ``image`` instead: same arguments, the program taken from the image
    (/usr/bin/sluice-X), the node's DPDK files and the hugepages shared.
    EAL ``-d`` options are added in front: the image's DPDK drivers, the
    mempool handlers in the order sluiced loaded them.

    ``workdir``: a host folder mounted read-only at the same path and made
    the working directory (NF arguments with relative paths, e.g. a
    firewall's rules file). ``check``: first make sure the image exists and
    holds this very program (ContainerError saying how to build it).
    """
    if not argv:
        raise ContainerError("wrap: empty NF command line")
    prog = Path(argv[0])
    problem = container_program_problem(argv[0])  # what `sluice check` says too
    if problem:
        raise ContainerError(problem)
    rt = runtime()
    if check:
        # By name too when the launcher found no such program on the host:
        # an NF the image lacks is refused here, not by the runtime's
        # "exec: ... no such file or directory" (status 126) after start.
        check_image(image, [prog], who=f"NF '{name}': ")
    pmds = pmd_dir()
    if pmds is None:
        raise ContainerError(f"DPDK's driver folder (…/dpdk/pmds-*) was not found: "
                             f"install dpdk (run {SETUP_HINT})")
    # The drivers, mempool handlers first in sluiced's order (see
    # mempool_driver_order), then the rest of the image's driver folder.
    eal = [a for name in mempool_driver_order(pmds) for a in ("-d", f"{IMAGE_PMDS}/{name}")]
    eal += ["-d", IMAGE_PMDS]
    rest = argv[1:] if "--" in argv else ["--", *argv[1:]]
    prefix = _file_prefix(argv, node)
    rundir = DPDK_RUN_DIR / prefix
    if not rundir.is_dir():
        raise ContainerError(f"{rundir} does not exist: start sluiced for node '{node}' "
                             f"before its NFs")
    # podman: what scripts/containers.conf says, as options, so the command
    # works without CONTAINERS_CONF in its environment (a launcher's Popen,
    # a copy pasted into a shell).
    cmd = [rt, *podman_global_options(), "run"] if rt == "podman" else [rt, "run"]
    cmd += ["--rm", "--name", container_name(node, name),
            "-e", f"{ENV_NAME}={container_name(node, name)}",
            "--network", "none", "--pid", "host", "--cap-drop", "all",
            "--pull", "never"]
    if rt == "podman":
        # A container of that name left by a killed launcher is replaced;
        # the NF's output goes straight to this process's stdout/stderr.
        cmd += ["--replace", "--log-driver", "passthrough", *podman_run_options()]
    else:
        cmd += ["--log-driver", "none"]
    for m in hugetlbfs_mounts():
        cmd += ["-v", f"{m}:{m}"]
    cmd += ["-v", f"{rundir}:{rundir}"]
    # sluiced's links to its net_pcap ports' captures: the NF's EAL probes
    # those ports with them, as a host NF's does.
    cmd += pcap_link_mounts(rundir)
    if workdir is not None:
        wd = str(Path(workdir).resolve())
        cmd += ["-v", f"{wd}:{wd}:ro", "-w", wd]
    return [*cmd, image, f"{IMAGE_BIN}/{prog.name}", *eal, *rest]


def nf_pid(node: str, name: str) -> int | None:
    """The host pid of the NF running in the container ``wrap`` made for
    (node, name): the pid it registers with sluiced (``nf.list``), which is
    not the pid of the ``podman run`` process. None if it is not running.
    Found by the SLUICE_CONTAINER variable wrap sets (reads /proc; no call
    to the container runtime)."""
    want = f"{ENV_NAME}={container_name(node, name)}".encode()
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if not (d / "cmdline").read_bytes().startswith(f"{IMAGE_BIN}/sluice-".encode()):
                continue
            if want in (d / "environ").read_bytes().split(b"\0"):
                return int(d.name)
        except OSError:
            continue
    return None


# -- command line -------------------------------------------------------------------

def main(args: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m sluice.container",
                                 description="Sluice NF container image (docs/containers.md)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="build the NF image unless it is up to date")
    b.add_argument("--image", default=DEFAULT_IMAGE)
    b.add_argument("--build-dir", type=Path, default=None,
                   help="build folder with nfs/*/sluice-* (default: $SLUICE_BUILD_DIR or build/)")
    b.add_argument("--force", action="store_true", help="build even if up to date")
    c = sub.add_parser("check", help="exit 0 if the image is up to date with the build folder")
    c.add_argument("--image", default=DEFAULT_IMAGE)
    c.add_argument("--build-dir", type=Path, default=None)
    s = sub.add_parser("stage", help="only write the image's root file system to DIR/rootfs")
    s.add_argument("dir", type=Path)
    s.add_argument("--build-dir", type=Path, default=None)
    sub.add_parser("runtime", help="print the container runtime in use")
    a = ap.parse_args(args)
    try:
        if a.cmd == "build":
            build_image(a.image, a.build_dir, force=a.force, say=print)
        elif a.cmd == "check":
            st = image_status(a.image, a.build_dir)
            print(f"{a.image}: {st}")
            return 0 if st == "current" else 1
        elif a.cmd == "stage":
            print(stage(image_rootfs(a.build_dir), a.dir))
        elif a.cmd == "runtime":
            print(runtime())
    except ContainerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
