"""No import cycles among tickwheel's modules (issue 32): one module's imports never lead back
to it.

The graph is grimp's (what import-linter reads): every import statement counts, those under
`TYPE_CHECKING` and inside functions included, so a cycle is not broken by hiding an import
where the interpreter does not run it at start-up. A cycle found is named with the import of
each step, file line included, so the failure says what to move.
"""

from __future__ import annotations

from itertools import pairwise

import grimp

PACKAGE = "tickwheel"


def cyclic_groups(graph: grimp.ImportGraph, package: str) -> list[list[str]]:
    """The strongly connected components of more than one module among `package`'s modules,
    each sorted, in order of their first module (Tarjan's algorithm, without recursion: the
    graph is deeper than Python's default recursion limit allows)."""
    modules = sorted(m for m in graph.modules if m == package or m.startswith(package + "."))
    inside = set(modules)
    imports = {m: sorted(graph.find_modules_directly_imported_by(m) & inside) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        walk = [(root, iter(imports[root]))]
        while walk:
            module, pending = walk[-1]
            following = next(pending, None)
            if following is not None:
                if following not in index:
                    index[following] = low[following] = len(index)
                    stack.append(following)
                    on_stack.add(following)
                    walk.append((following, iter(imports[following])))
                elif following in on_stack:
                    low[module] = min(low[module], index[following])
                continue
            walk.pop()
            if walk:
                caller = walk[-1][0]
                low[caller] = min(low[caller], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def one_cycle(graph: grimp.ImportGraph, group: list[str]) -> list[str]:
    """A shortest cycle through the group's first module, as the modules it passes."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        reached = []
        for module in frontier:
            for imported in sorted(graph.find_modules_directly_imported_by(module) & members):
                if imported == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if imported not in came_from:
                    came_from[imported] = module
                    reached.append(imported)
        frontier = reached
    raise AssertionError(f"{group} is strongly connected, yet no cycle runs through {start}")


def describe(graph: grimp.ImportGraph, group: list[str]) -> str:
    """The group's modules, then one cycle through them, step by step with its import."""
    cycle = one_cycle(graph, group)
    lines = [f"{len(group)} modules: {', '.join(group)}", "  for example:"]
    for importer, imported in pairwise(cycle):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = ", ".join(f"l.{d['line_number']} `{d['line_contents']}`" for d in details)
        lines.append(f"    {importer} -> {imported} ({where})")
    return "\n".join(lines)


def test_no_module_of_tickwheel_imports_itself_through_others() -> None:
    graph = grimp.build_graph(PACKAGE)
    groups = cyclic_groups(graph, PACKAGE)
    cycles = "\n".join(describe(graph, group) for group in groups)
    assert groups == [], (
        "import cycles; break each by moving what both sides need to a module both import, or "
        f"by turning the dependency around (not by hiding an import in a function):\n{cycles}"
    )


def test_a_cycle_is_found_and_named_with_its_imports() -> None:
    """The check itself: a cycle of three modules, beside a module that only imports into it,
    is found as one group and described step by step."""
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c", "pkg.d", "other"):
        graph.add_module(module)
    for importer, imported, line in (
        ("pkg.a", "pkg.b", 3),
        ("pkg.b", "pkg.c", 4),
        ("pkg.c", "pkg.a", 5),
        ("pkg.d", "pkg.a", 6),
        ("pkg.a", "other", 7),
        ("other", "pkg.d", 8),  # outside the package: not a cycle of its modules
    ):
        graph.add_import(
            importer=importer,
            imported=imported,
            line_number=line,
            line_contents=f"import {imported}",
        )
    groups = cyclic_groups(graph, "pkg")
    assert groups == [["pkg.a", "pkg.b", "pkg.c"]]
    assert one_cycle(graph, groups[0]) == ["pkg.a", "pkg.b", "pkg.c", "pkg.a"]
    assert "pkg.c -> pkg.a (l.5 `import pkg.a`)" in describe(graph, groups[0])
