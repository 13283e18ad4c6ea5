"""The code's shape, enforced (issue 20, item 4; STYLE.md "Layout and dependencies between apps").

Over the four apps (``dataset_app``, ``guardian_app``, ``sessions_app``, ``reflection_site``), migrations aside:
- the import contracts in ``.importlinter`` hold (apps import down the pipeline, the gate's two hand-offs being the
  only exceptions; guardian_app's packages in their layers; no package's children import each other in a loop);
- no module imports another that leads back to it, through imports at the top of a module or inside a function;
- no module over 500 lines (the heuristic gate's rule tables aside), no function over 80 lines;
- no block of six or more lines stands twice (pylint's ``symilar``, imports, docstrings and comments left out).

Each test fails with the full list of what breaks its rule. ``python tests/test_architecture.py [FILE]`` writes
every list, grouped by file, to FILE (default: the terminal).
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest
from pylint.checkers.symilar import Commonality, Symilar, hash_lineset

ROOT = Path(__file__).resolve().parent.parent
APPS = ("dataset_app", "guardian_app", "sessions_app", "reflection_site")
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
MIN_REPEATED_LINES = 6
# The modules that may pass MAX_MODULE_LINES, because they are tables and not logic. Keep this list short and
# name files, never folders (a file not yet written allows nothing).
LONG_MODULES_ALLOWED = {
    "sessions_app/heuristic_rules.py": "the heuristic gate's rule tables (issue 20, item 4)",
}


def source_files() -> list[Path]:
    """The apps' Python files, migrations left out, as paths relative to the repository."""
    files = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" not in relative.parts:
                files.append(relative)
    return files


# Import contracts and cycles -------------------------------------------------------------------------------------


def import_contracts_report() -> tuple[bool, str]:
    """Runs ``lint-imports`` on ``.importlinter``: whether every contract is kept, and its report."""
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='.importlinter', no_cache=True, no_logo=True))"
    )
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1", "TERM": "dumb"}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    return result.returncode == 0, (result.stdout + result.stderr).strip()


def module_file(module: str) -> Path:
    """``guardian_app.models`` -> ``guardian_app/models/__init__.py`` or ``guardian_app/models.py`` (relative)."""
    path = Path(*module.split("."))
    return path / "__init__.py" if (ROOT / path).is_dir() else path.with_suffix(".py")


def _module_level_import_lines(module: str) -> set[int]:
    """The lines of ``module`` that import at module level (not inside a function or class)."""
    lines: set[int] = set()
    pending: list[ast.AST] = list(ast.parse((ROOT / module_file(module)).read_text(encoding="utf-8")).body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            lines.add(node.lineno)
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return lines


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion: the groups of two or more modules that reach each other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return sorted(groups)


def _shortest_path(graph: dict[str, set[str]], start: str, end: str, members: set[str]) -> list[str]:
    """A shortest way from ``start`` to ``end`` through ``members`` (breadth first); [] if there is none."""
    came_from: dict[str, str] = {start: start}
    frontier = [start]
    while frontier and end not in came_from:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    if end not in came_from:
        return []
    path = [end]
    while path[-1] != start:
        path.append(came_from[path[-1]])
    return path[::-1]


def _shortest_loop(graph: dict[str, set[str]], start: str, members: set[str]) -> list[str]:
    """A shortest way from ``start`` back to itself through ``members``."""
    ways = [_shortest_path(graph, child, start, members) for child in sorted(graph[start] & members)]
    return [start, *min((way for way in ways if way), key=len, default=[start])]


def import_cycles() -> list[dict[str, object]]:
    """Every group of modules that import each other round (imports inside functions count too).

    Each group: its ``modules``; ``closers``, each import made inside a function within the group with the shortest
    way back from the imported module to the importer ((importer, lines, imported, way back)); and ``top_level``,
    the loops that imports at module level make on their own (each a list of modules, the first repeated last).
    """
    graph_ = grimp.build_graph(*APPS, cache_dir=None)
    graph = {module: set(graph_.find_modules_directly_imported_by(module)) for module in graph_.modules}
    top_level_graph: dict[str, set[str]] = {module: set() for module in graph}
    in_function: list[tuple[str, list[int], str]] = []
    for importer in graph:
        module_level = _module_level_import_lines(importer) if graph[importer] else set()
        for imported in graph[importer]:
            lines = sorted(d["line_number"] for d in graph_.get_import_details(importer=importer, imported=imported))
            if module_level.intersection(lines):
                top_level_graph[importer].add(imported)
            else:
                in_function.append((importer, lines, imported))
    top_level_groups = _strongly_connected(top_level_graph)
    cycles = []
    for group in _strongly_connected(graph):
        members = set(group)
        closers = [
            (importer, lines, imported, _shortest_path(graph, imported, importer, members))
            for importer, lines, imported in sorted(in_function)
            if importer in members and imported in members
        ]
        top_level = [
            _shortest_loop(top_level_graph, inner[0], set(inner)) for inner in top_level_groups if inner[0] in members
        ]
        cycles.append({"modules": group, "closers": closers, "top_level": top_level})
    return cycles


def describe_cycles(cycles: list[dict[str, object]]) -> str:
    out = []
    for cycle in cycles:
        modules = cycle["modules"]
        out.append(f"{len(modules)} modules import each other round: {', '.join(modules)}")
        for loop in cycle["top_level"]:
            out.append(f"  a loop of imports at module level alone: {' -> '.join(loop)}")
        for importer, lines, imported, way_back in cycle["closers"]:
            at = ",".join(map(str, lines))
            out.append(f"  {importer}:{at} -> {imported} (in a function), and back: {' -> '.join(way_back)}")
    return "\n".join(out)


# Sizes -----------------------------------------------------------------------------------------------------------


def long_modules() -> list[tuple[str, int]]:
    """(path, lines) for every module over MAX_MODULE_LINES that is not an allowed table."""
    found = []
    for path in source_files():
        lines = len((ROOT / path).read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES and path.as_posix() not in LONG_MODULES_ALLOWED:
            found.append((path.as_posix(), lines))
    return found


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method, nested ones too, with a qualified name (``Class.method``, ``outer.inner``)."""
    pending: list[tuple[str, ast.AST]] = [("", tree)]
    while pending:
        prefix, node = pending.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, child
                pending.append((f"{name}.", child))
            else:
                pending.append((prefix, child))


def long_functions() -> list[tuple[str, int, str, int]]:
    """(path, line, name, lines) for every function whose ``def`` spans over MAX_FUNCTION_LINES lines."""
    found = []
    for path in source_files():
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        for name, node in _functions(tree):
            span = node.end_lineno - node.lineno + 1
            if span > MAX_FUNCTION_LINES:
                found.append((path.as_posix(), node.lineno, name, span))
    return sorted(found)


# Repeated blocks -------------------------------------------------------------------------------------------------


class _Symilar(Symilar):
    """pylint's symilar, which compares files pairwise, also comparing each file with itself."""

    def _iter_sims(self) -> Iterator[Commonality]:
        yield from super()._iter_sims()
        for lineset in self.linesets:
            hashes = hash_lineset(lineset, self.namespace.min_similarity_lines)
            for common in self._find_common(lineset, lineset, hashes, hashes):
                if common.fst_file_start < common.snd_file_start:  # not the file against itself, each pair once
                    yield common


def _without_imports(text: str) -> str:
    """``text`` with its import statements blanked (lines kept, so line numbers stay)."""
    lines = text.splitlines(keepends=True)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            for index in range(node.lineno - 1, node.end_lineno):
                lines[index] = "\n"
    return "".join(lines)


def find_repeats(texts: dict[str, str]) -> list[tuple[int, list[tuple[str, int, int]]]]:
    """(lines, [(name, first line, last line), ...]) for every block of MIN_REPEATED_LINES or more lines with code
    that stands in two or more places of ``texts`` ({name: source}). Imports, docstrings, comments and blank lines
    do not count."""
    # symilar reports a block only when it has more code lines than its min_lines, hence the - 1. Imports are
    # blanked here rather than by symilar's ignore_imports, which has astroid parse and infer every module (slow).
    symilar = _Symilar(min_lines=MIN_REPEATED_LINES - 1, ignore_comments=True, ignore_docstrings=True)
    for name, text in texts.items():
        symilar.append_stream(name, io.StringIO(_without_imports(text)))
    found = []
    for lines, places in symilar._compute_sims():
        # symilar's lines are 0-based and its ends exclusive: [51:62] is lines 52 to 62.
        found.append((lines, sorted((lineset.name, start + 1, end) for lineset, start, end in places)))
    return sorted(found, key=lambda block: (-block[0], block[1]))


def repeated_blocks() -> list[tuple[int, list[tuple[str, int, int]]]]:
    """find_repeats over the apps' modules."""
    return find_repeats({path.as_posix(): (ROOT / path).read_text(encoding="utf-8") for path in source_files()})


def describe_blocks(blocks: list[tuple[int, list[tuple[str, int, int]]]]) -> str:
    out = []
    for lines, places in blocks:
        out.append(f"{lines} lines: " + " ~ ".join(f"{path}:{first}-{last}" for path, first, last in places))
    return "\n".join(out)


# Tests -----------------------------------------------------------------------------------------------------------


def test_import_contracts_hold() -> None:
    kept, report = import_contracts_report()
    if not kept:
        pytest.fail(report, pytrace=False)


def test_no_module_imports_in_a_cycle() -> None:
    cycles = import_cycles()
    if cycles:
        pytest.fail("Modules that import each other round:\n" + describe_cycles(cycles), pytrace=False)


def test_no_module_over_500_lines() -> None:
    found = long_modules()
    if found:
        listing = "\n".join(f"  {path}: {lines} lines" for path, lines in found)
        pytest.fail(f"Modules over {MAX_MODULE_LINES} lines:\n{listing}", pytrace=False)


def test_no_function_over_80_lines() -> None:
    found = long_functions()
    if found:
        listing = "\n".join(f"  {path}:{line} {name}: {lines} lines" for path, line, name, lines in found)
        pytest.fail(f"Functions over {MAX_FUNCTION_LINES} lines:\n{listing}", pytrace=False)


def test_no_block_of_six_lines_repeated() -> None:
    blocks = repeated_blocks()
    if blocks:
        pytest.fail(
            f"Blocks of {MIN_REPEATED_LINES}+ lines that stand twice:\n{describe_blocks(blocks)}", pytrace=False
        )


def test_the_checks_see_the_code() -> None:
    """The rules above would pass by reading nothing: they read every app, and each measure counts right."""
    files = source_files()
    assert {path.parts[0] for path in files} == set(APPS)
    assert not any("migrations" in path.parts for path in files)

    tree = ast.parse("class A:\n    def f(self):\n        def g():\n            pass\n\n        return g\n")
    assert [(name, node.end_lineno - node.lineno + 1) for name, node in _functions(tree)] == [("A.f", 5), ("A.f.g", 2)]

    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}}
    assert _strongly_connected(graph) == [["a", "b", "c"]]
    assert _shortest_loop(graph, "a", {"a", "b", "c"}) == ["a", "b", "c", "a"]
    assert _shortest_path(graph, "b", "a", {"a", "b", "c"}) == ["b", "c", "a"]

    six = "".join(f"    total = total * {n} + len(items[{n}])\n" for n in range(6))
    imports = "".join(f"import module_{n}\n" for n in range(8))
    twice = {
        "one.py": f"{imports}def f(items):\n    total = 0\n{six}    return total\n",
        "two.py": f"{imports}def g(items):\n    total = 1\n{six}    return -total\n",
    }
    assert find_repeats(twice) == [(6, [("one.py", 11, 16), ("two.py", 11, 16)])]
    within = {"one.py": twice["one.py"] + "\n\n" + twice["two.py"].replace(imports, "")}
    assert find_repeats(within) == [(6, [("one.py", 11, 16), ("one.py", 22, 27)])]
    five = {name: text.replace("    total = total * 5 + len(items[5])\n", "") for name, text in twice.items()}
    assert find_repeats(five) == []


# Report ----------------------------------------------------------------------------------------------------------


def _source_line(module: str, line: int) -> str:
    lines = (ROOT / module_file(module)).read_text(encoding="utf-8").splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def contract_breaches() -> dict[str, set[tuple[int, str]]]:
    """The broken contracts' imports by importing module: (line, "source line    [what it breaks]")."""
    from importlinter import configuration
    from importlinter.application import use_cases

    configuration.configure()
    use_cases._register_built_in_contract_types()  # lint_imports does this first; create_report does not
    result = use_cases.create_report(use_cases.read_user_options(str(ROOT / ".importlinter")), cache_dir=None)
    found: dict[str, set[tuple[int, str]]] = defaultdict(set)
    for contract, check in result.get_contracts_and_checks():
        for dependency in check.metadata.get("invalid_dependencies", []):
            rule = f"{dependency['importer']} may not import {dependency['imported']}"
            for route in dependency["routes"]:
                chain = route["chain"]
                via = f", via {' -> '.join([chain[0]['importer']] + [link['imported'] for link in chain])}"
                for link in route["extra_firsts"] + chain + route["extra_lasts"]:
                    for line in link["line_numbers"]:
                        note = rule + (via if len(chain) > 1 else "")
                        found[link["importer"]].add(
                            (line or 0, f"{_source_line(link['importer'], line or 0)}    [{note}]")
                        )
        for module in check.metadata.get("undeclared_modules", []):
            found[module].add((0, f"not in any layer of {contract.name!r}"))
        for package, breakers in check.metadata.get("cycle_breakers_by_package", {}).items():
            note = f"one import to drop so that {package}'s children import no loop (import-linter's pick)"
            for importer, imported in breakers:
                for detail in result.graph.get_import_details(importer=importer, imported=imported):
                    line = detail["line_number"]
                    found[importer].add((line, f"{_source_line(importer, line)}    [{note}]"))
    return found


def _by_app_and_file(entries: dict[str, list[str]]) -> str:
    """``{path: [line, ...]}`` as an app heading, then each path and its lines indented under it (a single line
    that is not a source line stands after the path)."""
    out = []
    for app in APPS:
        paths = sorted(path for path in entries if path.split("/")[0] == app)
        out += [app] if paths else []
        for path in paths:
            if len(entries[path]) == 1 and ":" not in entries[path][0]:
                out.append(f"  {path}: {entries[path][0]}")
            else:
                out += [f"  {path}", *(f"    {entry}" for entry in entries[path])]
    return "\n".join(out) or "none"


def report() -> str:
    """Every rule's current breaches, by rule, then by app and file, after a line of counts."""
    breaches = contract_breaches()
    contracts = {
        module_file(module).as_posix(): [f"{line:>5}: {text}" for line, text in sorted(entries)]
        for module, entries in breaches.items()
    }
    modules: dict[str, list[str]] = defaultdict(list)
    for path, lines in long_modules():
        modules[path].append(f"{lines} lines")
    functions: dict[str, list[str]] = defaultdict(list)
    for path, line, name, lines in long_functions():
        functions[path].append(f"{line:>5}: {name} ({lines} lines)")
    cycles = import_cycles()
    blocks = repeated_blocks()
    counts = (
        f"{sum(len(entries) for entries in breaches.values())} imports breaking a contract, {len(cycles)} import "
        f"cycles, {len(modules)} modules over {MAX_MODULE_LINES} lines, {sum(map(len, functions.values()))} "
        f"functions over {MAX_FUNCTION_LINES} lines, {len(blocks)} repeated blocks"
    )
    sections = [
        ("Counts", counts),
        ("Import contracts (.importlinter; `lint-imports --no-cache` prints the same)", _by_app_and_file(contracts)),
        ("Import cycles", describe_cycles(cycles) or "none"),
        (f"Modules over {MAX_MODULE_LINES} lines", _by_app_and_file(modules)),
        (f"Functions over {MAX_FUNCTION_LINES} lines", _by_app_and_file(functions)),
        (f"Blocks of {MIN_REPEATED_LINES}+ lines repeated (symilar)", describe_blocks(blocks) or "none"),
    ]
    return "\n\n".join(f"== {title}\n{body}" for title, body in sections) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    text = report()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
