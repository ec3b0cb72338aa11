"""The benchmark's results: ratios from the medians, a table, bench/results.json, a chart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

GOALS = {
    "noop_preview_over_floor": ("<=", 2.0),
    "cold_up_over_script": ("<=", 1.3),
    "cold_up_8_over_2": ("<=", 1.5),
    "hostmode_allreduce_over_bare": (">=", 0.95),
}
"""The issue's goals: ratio -> (comparison, bound)."""

LARGEST = "256"
"""All-reduce ratios compare the bus bandwidth at the largest message (MiB)."""


def ratios(results: dict[str, Any]) -> dict[str, float | None]:
    """Every ratio the results allow; None where its inputs were not measured."""

    def ratio(numerator: float | None, denominator: float | None) -> float | None:
        return round(numerator / denominator, 3) if numerator and denominator else None

    cold = {entry["hosts"]: entry for entry in results.get("cold_up", [])}
    steady = results.get("steady_state", {})
    allreduce = results.get("allreduce_busbw_gbps", {})
    two = cold.get(2, {})
    # The floor measured beside the no-op runs when there is one.
    floor = steady.get("empty_preview_s", results.get("empty_preview_s"))
    return {
        "noop_preview_over_floor": ratio(steady.get("noop_preview_s"), floor),
        "noop_preview_without_refresh_over_floor": ratio(steady.get("noop_preview_without_refresh_s"), floor),
        "noop_up_over_floor": ratio(steady.get("noop_up_s"), floor),
        "cold_up_over_script": ratio(two.get("pulumi_up_s"), two.get("floor_s")),
        **{
            f"cold_up_over_script_{hosts}": ratio(entry["pulumi_up_s"], entry["floor_s"])
            for hosts, entry in cold.items()
        },
        "cold_up_4_over_2": ratio(cold.get(4, {}).get("pulumi_up_s"), two.get("pulumi_up_s")),
        "cold_up_8_over_2": ratio(cold.get(8, {}).get("pulumi_up_s"), two.get("pulumi_up_s")),
        "floor_8_over_2": ratio(cold.get(8, {}).get("floor_s"), two.get("floor_s")),
        # The same without the image copies, which all go through one machine on this lab.
        "cold_up_8_over_2_without_ship": ratio(
            cold.get(8, {}).get("pulumi_up_without_ship_s"), two.get("pulumi_up_without_ship_s")
        ),
        **{
            f"registry_over_copy_{entry['hosts']}": ratio(entry["registry_s"], entry["copy_s"])
            for entry in results.get("registry_vs_copy", [])
        },
        "hostmode_allreduce_over_bare": ratio(
            allreduce.get("host", {}).get(LARGEST), allreduce.get("bare", {}).get(LARGEST)
        ),
        "overlay_allreduce_over_bare": ratio(
            allreduce.get("overlay", {}).get(LARGEST), allreduce.get("bare", {}).get(LARGEST)
        ),
    }


def goal_text(name: str, value: float | None) -> str:
    if name not in GOALS or value is None:
        return ""
    comparison, bound = GOALS[name]
    met = value <= bound if comparison == "<=" else value >= bound
    return f"goal {comparison} {bound}: {'met' if met else 'MISSED'}"


def table(results: dict[str, Any]) -> str:
    lines = ["ratio                              value   goal"]
    for name, value in results["ratios"].items():
        shown = "-" if value is None else f"{value:.3f}"
        lines.append(f"{name:<34} {shown:>6}   {goal_text(name, value)}")
    lines.append("")
    lines.append(f"empty program preview (engine floor): {results.get('empty_preview_s')} s")
    for key, value in results.get("steady_state", {}).items():
        if not key.endswith("_all_s"):
            lines.append(f"{key}: {value} s")
    for entry in results.get("cold_up", []):
        shipping = f" (of which shipping the image {entry['ship_s']} s)" if "ship_s" in entry else ""
        lines.append(
            f"cold up, {entry['hosts']} hosts: pulumi {entry['pulumi_up_s']} s{shipping}, shell floor {entry['floor_s']} s"
        )
    for entry in results.get("distribution", []):
        new_hosts = entry.get("every-host-new-hosts", {}).get("median_s", "-")
        lines.append(
            f"cold up on {entry['hosts']} hosts: build-once {entry['build-once']['median_s']} s, every-host "
            f"{entry['every-host']['median_s']} s (caches warm), {new_hosts} s (workers' caches empty)"
        )
    for mode, sizes in results.get("allreduce_busbw_gbps", {}).items():
        lines.append(f"all-reduce busbw {mode}: " + ", ".join(f"{size} MiB {value} Gbit/s" for size, value in sizes.items()))
    return "\n".join(lines)


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (lifecycle, network, relay) = plt.subplots(1, 3, figsize=(18, 4.5))
    cold = results.get("cold_up", [])
    if cold:
        hosts = [str(entry["hosts"]) for entry in cold]
        positions = range(len(hosts))
        lifecycle.bar([p - 0.2 for p in positions], [e["pulumi_up_s"] for e in cold], 0.4, label="pulumi up")
        lifecycle.bar([p + 0.2 for p in positions], [e["floor_s"] for e in cold], 0.4, label="shell script floor")
        lifecycle.set_xticks(list(positions), [f"{h} hosts" for h in hosts])
        lifecycle.set_ylabel("seconds (median)")
        lifecycle.set_title("cold up, bare hosts to SSH mesh")
        lifecycle.legend()
    for mode, sizes in results.get("allreduce_busbw_gbps", {}).items():
        network.plot([float(size) for size in sizes], list(sizes.values()), marker="o", label=mode)
    network.set_xscale("log", base=2)
    network.set_xlabel("message size (MiB)")
    network.set_ylabel("bus bandwidth, Gbit/s (median)")
    network.set_title("all-reduce between 2 hosts (gloo, CPU)")
    network.legend()
    distribution_chart(relay, results.get("relay"))
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def distribution_chart(axes: Any, relay: dict[str, Any] | None) -> None:
    """bench.relay's figures on limited links: each mode's time against the hosts, and one
    host-to-host copy of the same image, the physical limit."""
    if not relay or not relay.get("rows"):
        axes.set_axis_off()
        return
    rows = relay["rows"]
    hosts = [row["hosts"] for row in rows]
    for mode in ("build-once", "relay"):
        axes.plot(hosts, [row[f"{mode}_s"] for row in rows], marker="o", label=mode)
    if relay.get("copy_s"):
        axes.axhline(relay["copy_s"], linestyle="--", color="grey", label="one host-to-host copy")
    first = rows[0]
    axes.set_xticks(hosts)
    axes.set_xlabel("hosts")
    axes.set_ylabel("seconds (median)")
    axes.set_title(f"{first['mb']} MB image, links {first['link']}, operator {first['operator_link']}")
    axes.legend()


def write(results: dict[str, Any], directory: Path) -> None:
    results["ratios"] = ratios(results)
    (directory / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(table(results), flush=True)
    chart(results, directory / "results.png")
