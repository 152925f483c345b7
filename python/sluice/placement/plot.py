"""Draw a placement plan to a PNG with matplotlib (Agg backend, no display)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402

from .model import Problem  # noqa: E402
from .plan import Plan  # noqa: E402


def layout(problem: Problem, seed: int = 0) -> dict[str, Any]:
    g = problem.graph
    if all("pos" in g.nodes[n] for n in g.nodes):
        return {n: tuple(g.nodes[n]["pos"]) for n in g.nodes}
    return nx.spring_layout(g, seed=seed)


def draw(problem: Problem, plan: Plan, path: Path, seed: int = 0) -> None:
    """Nodes coloured by core utilisation and labelled with their instances;
    links coloured and thickened by utilisation (the busier direction)."""
    g = problem.graph
    pos = layout(problem, seed)
    fig, ax = plt.subplots(figsize=(11, 8))
    cmap = plt.get_cmap("viridis")
    util = {}
    for u, v in g.edges:
        util[(u, v)] = max(plan.link_utilisation.get((u, v), 0.0),
                           plan.link_utilisation.get((v, u), 0.0))
    edges = list(g.edges)
    colors: Any = [util[e] for e in edges]  # values for edge_cmap
    nx.draw_networkx_edges(
        g, pos, ax=ax, edgelist=edges,
        width=[1.0 + 5.0 * util[e] for e in edges],
        edge_color=colors, edge_cmap=cmap, edge_vmin=0.0, edge_vmax=1.0,
    )
    inst: dict[str, list[str]] = defaultdict(list)
    for (n, s), c in sorted(plan.instances.items()):
        inst[n].append(f"{s}x{c}" if c > 1 else s)
    nodes = list(g.nodes)
    nx.draw_networkx_nodes(
        g, pos, ax=ax, nodelist=nodes,
        node_size=[300 + 120 * problem.cores(n) for n in nodes],
        node_color=[plan.node_utilisation.get(n, 0.0) for n in nodes],
        cmap=plt.get_cmap("OrRd"), vmin=0.0, vmax=1.0, edgecolors="black",
    )
    labels = {}
    for n in nodes:
        name = str(g.nodes[n].get("label", n))
        extra = "\n" + " ".join(inst[n]) if inst[n] else ""
        labels[n] = f"{name}{extra}"
    ys = [p[1] for p in pos.values()]
    dy = 0.05 * ((max(ys) - min(ys)) or 1.0)
    for n, text in labels.items():
        x, y = pos[n]
        ax.text(x, y - dy, text, ha="center", va="top", fontsize=7,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "0.7", "alpha": 0.85})
    ax.margins(0.08)
    sm = plt.cm.ScalarMappable(cmap=cmap, norm=Normalize(0, 1))
    fig.colorbar(sm, ax=ax, shrink=0.5, label="link utilisation (busier direction)")
    sm2 = plt.cm.ScalarMappable(cmap=plt.get_cmap("OrRd"), norm=Normalize(0, 1))
    fig.colorbar(sm2, ax=ax, shrink=0.5, label="node core utilisation")
    ax.set_title(
        f"{problem.name}: {plan.algorithm} ({plan.status}) -- "
        f"{plan.accepted}/{len(problem.flows)} flows, U={plan.utilisation:.2f}, "
        f"{plan.cores_used}/{problem.total_cores} cores"
    )
    ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
