"""``sluice place``: place NF instances and route flows from the command line.

The main ``sluice`` app registers :func:`place` as a sub-command; this module
also runs on its own: ``python -m sluice.placement.cli TOPOLOGY FLOWS ...``.

Exit status: 0 done (some flows may be rejected, see the table), 1 bad input
file, 2 bad option, 3 the plan failed validation (a bug: please report it),
4 the plan could not be written or drawn.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from .model import Problem
    from .plan import Plan

ALGOS = ("division", "milp", "greedy", "affinity")
ORDERS = ("constrained", "input")  # division.ORDERS, without importing the solver here
MAX_REJECTED_SHOWN = 15
PLOT_FORMATS = (".png", ".svg", ".pdf")  # what matplotlib writes, by the file's extension


def place(
    topology: Annotated[
        Path,
        typer.Argument(
            help="Topology: a YAML/JSON file, or topohub:<key> (e.g. topohub:sndlib/geant).",
            show_default=False,
        ),
    ],
    flows: Annotated[
        Path,
        typer.Argument(help="Flows file (YAML/JSON): services, chains, flows.", show_default=False),
    ],
    algo: Annotated[
        str,
        typer.Option("--algo", "-a", help="Algorithm: division, milp, greedy or affinity."),
    ] = "division",
    time_limit: Annotated[
        float,
        typer.Option(
            "--time-limit", "-t", help="Seconds the MILP solver may use (milp, division)."
        ),
    ] = 60.0,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Write the plan as JSON to this file ('-': stdout)."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Draw the placement to this .png, .svg or .pdf file."),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(help="Seed for generated flows/topologies without their own, and the solver."),
    ] = 0,
    solver: Annotated[
        str, typer.Option(help="MILP solver: cbc (bundled with PuLP) or highs (highspy).")
    ] = "cbc",
    mip_gap: Annotated[
        float, typer.Option(help="Relative MIP gap at which the solver may stop (0 = prove).")
    ] = 0.0,
    batch_size: Annotated[
        int, typer.Option(help="Flows per MILP batch for the division heuristic.")
    ] = 5,
    order: Annotated[
        str,
        typer.Option(help="Division's batch order: constrained (fewest delay-feasible "
                          "hosts first) or input (the paper's)."),
    ] = "constrained",
) -> None:
    """Place NF instances on nodes and route flows through their service chains."""
    from .io import InputError, load_problem
    from .validate import validate

    json_to_stdout = out is not None and str(out) == "-"
    console = Console(stderr=json_to_stdout, highlight=False)
    err = Console(stderr=True, highlight=False)

    _check_options(err, algo, solver, time_limit, mip_gap, batch_size, order, out, plot)
    try:
        problem = load_problem(topology, flows, seed=seed)
    except InputError as e:
        _fail(err, 1, e.issues + ["fix the file(s) above; docs/placement.md describes the formats"])
    if not problem.flows:
        _fail(err, 1, [f"{flows}: no flows to place: list them under flows, or have some made "
                       f"with generate (docs/placement.md, \"File formats\")"])

    console.print(
        f"[bold]{escape(str(problem.name))}[/]: "
        f"{_count(problem.graph.number_of_nodes(), 'node')}, "
        f"{_count(problem.graph.number_of_edges(), 'link')}, "
        f"{_count(problem.total_cores, 'core')}, {_count(len(problem.flows), 'flow')} -> {algo}",
        markup=True,
    )
    t0 = time.perf_counter()
    plan = _run_solve(err, problem, algo, time_limit=time_limit, seed=seed, solver=solver,
                      mip_gap=mip_gap, batch_size=batch_size, order=order)
    wall = time.perf_counter() - t0

    violations = validate(problem, plan)
    _summary(console, problem, plan, wall, len(violations))
    if violations:
        _fail(err, 3, [f"plan violates {v}" for v in violations[:20]]
              + ["this is a bug in the placement engine; please report it with the input files"])
    _write_outputs(console, err, problem, plan, out, plot, seed)


def _fail(err: Console, code: int, lines: list[str] | str) -> NoReturn:
    """Print each line as an error and exit with code."""
    for line in [lines] if isinstance(lines, str) else lines:
        # escaped: messages hold brackets (links[0], [low, high]) that are not markup
        err.print(f"[bold red]error:[/] {escape(line)}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


def _check_options(
    err: Console, algo: str, solver: str, time_limit: float, mip_gap: float, batch_size: int,
    order: str, out: Path | None, plot: Path | None,
) -> None:
    """Exit 2 on a bad option, 4 on an output path that cannot be written, before any
    input is read or solved."""
    if algo not in ALGOS:
        _fail(err, 2, f"unknown algorithm {algo!r}; choose one of: {', '.join(ALGOS)}")
    if solver not in ("cbc", "highs"):
        _fail(err, 2, f"unknown solver {solver!r}; choose cbc or highs")
    if not 0 < time_limit < math.inf:
        _fail(err, 2, f"--time-limit must be a positive number of seconds, got {time_limit:g}")
    if not 0 <= mip_gap < 1:
        _fail(err, 2, f"--mip-gap must be in [0, 1), got {mip_gap:g}")
    if batch_size < 1:
        _fail(err, 2, f"--batch-size must be at least 1, got {batch_size}")
    if order not in ORDERS:
        _fail(err, 2, f"unknown order {order!r}; choose one of: {', '.join(ORDERS)}")

    if plot is not None and Path(plot).suffix.lower() not in PLOT_FORMATS:
        _fail(err, 2,
              f"--plot {plot}: cannot draw a {Path(plot).suffix or 'file without an extension'}"
              f"{' file' if Path(plot).suffix else ''}: give a path ending in "
              f"{', '.join(PLOT_FORMATS[:-1])} or {PLOT_FORMATS[-1]}")
    # before the solve, which may take minutes: a file that cannot be written
    for what, target in (("--out", out), ("--plot", plot)):
        if target is not None and str(target) != "-" and not Path(target).parent.is_dir():
            _fail(err, 4, f"cannot write {target}: the folder {Path(target).parent} does not "
                          f"exist: create it or give {what} a path in an existing folder")


def _run_solve(
    err: Console, problem: Problem, algo: str, *, time_limit: float, seed: int, solver: str,
    mip_gap: float, batch_size: int, order: str,
) -> Plan:
    """Solve, with a progress bar on stderr for division and a spinner otherwise."""
    from .solve import solve

    if algo != "division":
        with err.status(f"running {algo}..."):
            return solve(
                problem, algo, time_limit=time_limit, seed=seed, solver=solver,
                mip_gap=mip_gap, batch_size=batch_size, order=order,
            )
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} flows, {task.fields[accepted]} accepted"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("division batches", total=len(problem.flows), accepted=0)

        def report(done: int, total: int, accepted: int) -> None:
            progress.update(task, completed=done, total=total, accepted=accepted)

        return solve(
            problem, algo, time_limit=time_limit, seed=seed, solver=solver,
            mip_gap=mip_gap, batch_size=batch_size, order=order, progress=report,
        )


def _write_outputs(
    console: Console, err: Console, problem: Problem, plan: Plan, out: Path | None,
    plot: Path | None, seed: int,
) -> None:
    """Write the plan's JSON to out ('-': stdout) and draw it to plot, each if given."""
    if out is not None:
        data = plan.to_dict(problem)
        data["command"] = _command_line()
        text = json.dumps(data, indent=2, default=_json_default)
        if str(out) == "-":
            sys.stdout.write(text + "\n")
        else:
            try:
                Path(out).write_text(text + "\n")
            except OSError as e:
                _fail(err, 4, f"cannot write {out}: {e.strerror or e}: give --out a path you "
                              f"may write to")
            console.print(f"plan written to {out}")
    if plot is not None:
        from .plot import draw

        try:
            draw(problem, plan, Path(plot), seed=seed)
        except OSError as e:
            _fail(err, 4, f"cannot write {plot}: {e.strerror or e}: give --plot a path you may "
                          f"write to")
        console.print(f"placement drawn to {plot}")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _command_line() -> str:
    argv = list(sys.argv)
    if not argv:
        return "place"
    prog = Path(argv[0]).name
    if prog in ("cli.py", "__main__.py"):
        prog = "python -m sluice.placement.cli"
    return " ".join([prog, *(shlex.quote(a) for a in argv[1:])])


def _json_default(x: object) -> object:
    if isinstance(x, float) and x == float("inf"):
        return None
    return str(x)


def _summary(
    console: Console, problem: Problem, plan: Plan, wall: float, n_violations: int
) -> None:
    t = Table(title="placement", show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("algorithm", plan.algorithm)
    status = plan.status
    if plan.algorithm == "milp":
        adm = plan.details.get("admission")
        ut = plan.details.get("utilisation")
        status += f" (flow count: {adm}, U: {ut})"
    t.add_row("status", status)
    accepted = f"{plan.accepted} of {len(problem.flows)}"
    if plan.accepted_bound is not None and plan.accepted_bound != plan.accepted:
        accepted += f" (at most {plan.accepted_bound} possible)"
    t.add_row("flows accepted", accepted)
    t.add_row("U (max link/core utilisation)", f"{plan.utilisation:.3f}")
    t.add_row("cores used", f"{plan.cores_used} of {problem.total_cores}")
    t.add_row("instances", str(len(plan.instances)) + " (node, service) pairs")
    if plan.protection:
        t.add_row("protected flows", f"{len(plan.protection)} (backup route for every single "
                  "node failure)")
    t.add_row("solve time", f"{plan.solve_time:.2f} s (wall {wall:.2f} s)")
    t.add_row("validator", "OK" if n_violations == 0 else f"{n_violations} violation(s)")
    console.print(t)
    if plan.rejected:
        r = Table(title=f"rejected flows ({len(plan.rejected)})", title_justify="left")
        r.add_column("flow")
        r.add_column("constraint")
        r.add_column("reason")
        for rej in plan.rejected[:MAX_REJECTED_SHOWN]:
            r.add_row(rej.flow, rej.constraint, rej.reason)
        if len(plan.rejected) > MAX_REJECTED_SHOWN:
            r.add_row("...", "", f"{len(plan.rejected) - MAX_REJECTED_SHOWN} more in the JSON "
                      "output (--out)")
        console.print(r)


def main() -> None:
    app = typer.Typer(add_completion=False, help=__doc__.splitlines()[0] if __doc__ else None)
    app.command()(place)
    app()


if __name__ == "__main__":
    main()
