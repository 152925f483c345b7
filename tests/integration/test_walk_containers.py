"""docs/containers.md followed as an operator would, with the obvious
mistakes: an NF program that is in neither the image nor the build (a
typo) is refused before anything runs, naming the NF and the program it
may have meant, not by the runtime's `exec: ... no such file` (status 126)
in the NF's log after the start; a program built but not in the image
says to rebuild the image."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import build_dir, deployment, prog

from sluice.core.deploy import load_deployment
from sluice.runtime import container
from sluice.runtime.client import SluiceError
from sluice.runtime.container import ContainerError
from sluice.runtime.launch import Launcher

IMAGE = container.DEFAULT_IMAGE


@pytest.fixture(scope="module")
def nf_image() -> str:
    try:
        container.build_image(IMAGE, build_dir())
    except ContainerError as e:
        pytest.fail(f"cannot build the NF image: {e}", pytrace=False)
    return IMAGE


def _built() -> str:
    return ", ".join(p.name for p in container.nf_programs())


def test_wrap_refuses_a_program_neither_built_nor_in_the_image(nf_image: str) -> None:
    with pytest.raises(ContainerError) as e:
        container.wrap(["sluice-forwrd", "--", "--node", "walkc"], name="fwd", image=nf_image,
                       node="walkc")
    assert str(e.value) == (
        f"NF 'fwd': there is no NF program sluice-forwrd: neither the container image "
        f"'{nf_image}' nor {container.default_build_dir()}/nfs/ has it (the NFs are "
        f"{_built()}): fix its program; did you mean 'sluice-forward'?")
    with pytest.raises(ContainerError) as e:
        container.wrap(["sluice-nosuch"], name="x.2", image=nf_image, node="walkc")
    assert str(e.value).startswith("NF 'x.2': there is no NF program sluice-nosuch: ")
    assert str(e.value).endswith(": fix its program")  # nothing close enough to suggest


def test_wrap_says_to_rebuild_for_a_program_built_since_the_image(nf_image: str,
                                                                 tmp_path: Path) -> None:
    new = tmp_path / "sluice-newnf"
    shutil.copy2(prog("forward"), new)
    with pytest.raises(ContainerError) as e:
        container.wrap([str(new), "--", "--node", "walkc"], name="n", image=nf_image,
                       node="walkc")
    assert re.fullmatch(r"container image 'sluice-nfs:latest' has no sluice-newnf \(it holds "
                        r"sluice-ddos-detect, .*sluice-forward.*\): NFs in containers must be "
                        r"built in build/nfs/; rebuild the image with scripts/build-image.sh",
                        str(e.value)), str(e.value)


def test_a_deployment_with_a_mistyped_container_program(nf_image: str, node: str,
                                                        tmp_path: Path) -> None:
    """`sluice up` of a file whose container NF names no NF: refused before
    the NF starts, sluiced stopped again, no container left."""
    dep = deployment(node, [{"name": "in", "device": "net_null0"},
                            {"name": "out", "device": "net_null1,no-rx=1"}],
                     [{"name": "fwd", "program": "sluice-forwrd", "service": "forward",
                       "run": "container"}], ["forward", "port:out"])
    f = tmp_path / "dep.yaml"
    f.write_text(yaml.safe_dump(dep, sort_keys=False))
    run = Launcher(load_deployment(f), log_dir=tmp_path / "run", build_dir=build_dir())
    with pytest.raises(SluiceError) as e:
        run.start()
    assert str(e.value).startswith("NF 'fwd': there is no NF program sluice-forwrd: ")
    assert str(e.value).endswith("did you mean 'sluice-forward'?")
    assert run.sluiced is not None and run.sluiced.exited() is not None
    assert not (tmp_path / "run" / "fwd.log").exists()  # never started
    names = container._run([container.runtime(), "ps", "-a", "--format", "{{.Names}}"],
                           container.runtime()).stdout.split()
    assert container.container_name(node, "fwd") not in names
