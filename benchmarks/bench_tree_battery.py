"""The tree audit battery against the catalog's tree controls, exactly. Prints figures;
asserts nothing.

Usage::

    python benchmarks/bench_tree_battery.py

For every tree control and the candidate law it is meant for, the exact total variation
between its round (then target sampling) and the target's law on each instance of the tree
battery: the instances of the three-token battery alone (what an audit saw before the
battery drew more model pairs), and the instances added since (two more random model pairs
over 4 and 5 tokens with three siblings, and a target falling against a draft rising over 6
tokens with four siblings, whose residual keeps the draft's support after every rejection).
An instance with exact TV 0 cannot show the bug to any number of samples; the planned audit
has power 0.99 from a TV of 0.05 on an instance.
"""

from __future__ import annotations

import time

from verispec.audits.instances import tree_audit_instances
from verispec.exact.criterion import check_round
from verispec.exact.executor import EnumerationBudgetExceeded
from verispec.verifiers import registry

#: The added instances, by the start of their names.
ADDED = ("random, model pair", "residual keeps")


def main() -> None:
    start = time.perf_counter()
    print(
        "| control | law | largest TV, 3-token instances | TV on each added instance | caught before / now |"
    )
    print("|---|---|---|---|---|")
    for name in registry.names():
        entry = registry.get(name)
        if not isinstance(entry, registry.TreeVerifier) or entry.kind != "control":
            continue
        for law in entry.laws:
            before, added = [], []
            for item in tree_audit_instances(0, law=law):
                try:
                    tv = float(check_round(entry, item.instance).tv_distance)
                except EnumerationBudgetExceeded:
                    tv = float("nan")  # too many drafted trees to enumerate
                (added if item.name.startswith(ADDED) else before).append(tv)
            largest = max(before)
            reach = [tv for tv in added if tv == tv]
            caught = (
                f"{'yes' if largest >= 0.05 else 'no'} / {'yes' if max([largest, *reach]) >= 0.05 else 'no'}"
            )
            cells = ", ".join("n/a" if tv != tv else f"{tv:.3f}" for tv in added)
            print(f"| {name} | {law} | {largest:.3f} | {cells} | {caught} |", flush=True)
    print(f"\n({time.perf_counter() - start:.0f} s; caught: some instance at TV >= 0.05, the planned effect)")


if __name__ == "__main__":
    main()
