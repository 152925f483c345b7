"""scripts/check_structure.py on small synthetic trees."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_structure.py"


@pytest.fixture(scope="module")
def cs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_structure", SCRIPT)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def c_function(name: str, body_lines: int) -> str:
    body = "".join(f"\tx += {i};\n" for i in range(body_lines))
    return f"static int\n{name}(int x)\n{{\n{body}\treturn x;\n}}\n\n"


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_long_c_function_found_short_one_not(cs: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, "src/common/a.c",
          "#include <stdio.h>\n" + c_function("short_one", 10) + c_function("long_one", 130))
    found = cs.offences(tmp_path)
    assert set(found) == {"src/common/a.c"}
    assert set(found["src/common/a.c"]) == {"function long_one"}
    assert "is 135 lines" in found["src/common/a.c"]["function long_one"]


def test_c_table_is_not_a_function(cs: ModuleType, tmp_path: Path) -> None:
    rows = "".join(f'\t{{ "opt{i}", {i} }},\n' for i in range(300))
    write(tmp_path, "src/mgr/opts.c",
          "struct opt { const char *name; int v; };\n"
          f"static const struct opt opts[] = {{\n{rows}}};\n"
          "enum { A, B };\n" + c_function("ok", 3))
    assert cs.offences(tmp_path) == {}


def test_long_python_function_and_marked_table(cs: ModuleType, tmp_path: Path) -> None:
    body = "".join(f"        x += {i}\n" for i in range(125))
    table = "".join(f"        {i}: 'v{i}',\n" for i in range(125))
    write(tmp_path, "python/pkg/m.py",
          f"class C:\n    def long(self, x):\n{body}        return x\n\n\n"
          f"def table():  # check_structure: data-table\n    return {{\n{table}    }}\n")
    found = cs.offences(tmp_path)
    assert set(found["python/pkg/m.py"]) == {"function C.long"}


def test_long_file_and_file_marker(cs: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, "tests/big.py", "x = 1\n" * 1001)
    write(tmp_path, "tests/table.py", "# check_structure: data-table\n" + "x = 1\n" * 1001)
    write(tmp_path, "build/gen.c", "int x;\n" * 2000)  # build trees are not checked
    found = cs.offences(tmp_path)
    assert set(found) == {"tests/big.py"}
    assert found["tests/big.py"]["lines"] == "1001 lines (at most 1000)"


def test_extern_and_file_scope_state(cs: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, "src/mgr/m.h",
          "extern struct sl_mgr g_mgr;\n"
          "extern const struct opt opts[];\n"
          "extern const char *const names[];\n"
          "extern const char *words[];\n"
          "extern int f(void);\n")
    write(tmp_path, "src/mgr/m.c",
          "static int g_count;\n"
          "static const int k_max = 3;\n"
          "static struct { int n; } rx;\n"
          "/* per-thread cache of the last lookup */\n"
          "static __thread int t_last;\n"
          "static __thread int t_bare;\n"
          "static int helper(void);\n"
          "int f(void) { return g_count; }\n")
    write(tmp_path, "nfs/x/x.c", "static int g_nf_state;\n")  # not src/mgr
    found = cs.offences(tmp_path)
    assert set(found) == {"src/mgr/m.h", "src/mgr/m.c"}
    assert set(found["src/mgr/m.h"]) == {"extern g_mgr", "extern words"}
    assert set(found["src/mgr/m.c"]) == {"mutable g_count", "mutable rx", "mutable t_bare"}


def test_state_a_context_free_callback_reaches(cs: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, "src/mgr/m.c",
          "/* The flag on_signal stores into.\n"
          " * check_structure: no-context (a signal handler has no argument) */\n"
          "static volatile int g_quit;\n"
          "/* the node, for the logger */\n"
          "static const char *g_name;\n"
          "static int g_after; /* check_structure: no-context, on its line only */\n")
    found = cs.offences(tmp_path)
    assert set(found["src/mgr/m.c"]) == {"mutable g_name", "mutable g_after"}


def test_negative_error_returns(cs: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, "src/mgr/a.c",
          "int f(int x)\n{\n"
          "\tif (x == 1)\n\t\treturn -1;\n"
          "\tif (x == 2)\n\t\treturn -EINVAL;\n"
          "\tif (x == 3)\n\t\treturn EINVAL;\n"
          "\tif (x == 4)\n\t\treturn -1; /* none */\n"
          "\tif (x == 5)\n\t\treturn -ENOSPC; /* index or -errno, as rte_hash */\n"
          "\t/* a comment saying return -1; is no code */\n"
          "\treturn x - 1;\n}\n")
    write(tmp_path, "src/nflib/b.c",
          "long g(void)\n{\n\treturn -EINVAL; /* NF API: -errno */\n}\n"
          "int h(void)\n{\n\treturn -E2BIG;\n}\n")
    write(tmp_path, "src/common/c.c", "int k(void)\n{\n\treturn -EINVAL;\n}\n")
    write(tmp_path, "nfs/x/x.c", "int m(void)\n{\n\treturn -1;\n}\n")
    found = cs.offences(tmp_path)
    assert set(found) == {"src/mgr/a.c", "src/nflib/b.c"}
    assert set(found["src/mgr/a.c"]) == {"errors"}
    assert found["src/mgr/a.c"]["errors"].startswith(
        "2 return(s) of -1 or -EXXX (lines 4, 6);")
    assert found["src/nflib/b.c"]["errors"].startswith("1 return(s) of -1 or -EXXX (lines 7);")


def test_baseline_fixed_entry_and_new_offence_fail(cs: ModuleType, tmp_path: Path) -> None:
    write(tmp_path, "src/common/a.c", c_function("long_one", 130))
    baseline = {"src/common/a.c": {"function long_one"}, "src/mgr/gone.c": {"lines"}}
    assert cs.check(tmp_path, baseline) == [
        "src/mgr/gone.c: fixed: delete from BASELINE: 'lines'"]
    assert cs.check(tmp_path, {"src/common/a.c": {"function long_one"}}) == []
    (failure,) = cs.check(tmp_path, {})
    assert failure.startswith("src/common/a.c: function long_one (line 1) is 135 lines")


def test_exit_status_and_message_on_failure(tmp_path: Path) -> None:
    write(tmp_path, "src/mgr/new.c", "static int g_new;\n")
    p = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tmp_path)],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 1
    assert "src/mgr/new.c: mutable file-scope variable g_new (line 1) in src/mgr" in p.stderr
    # the real tree's baselines are empty, so the one new offence is the
    # only failure (a baseline entry would be a second one here: "fixed")
    assert "fixed: delete from BASELINE" not in p.stderr
    assert "check_structure: 1 failure(s);" in p.stderr
