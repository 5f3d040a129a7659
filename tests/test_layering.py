"""perfgate's import rules, read from the source with ast (docs/design-notes.md, "Layout").

Layers, lowest first; a module imports only from its own layer or below, with no circle:

    errors atomic secrets hardware models  <-  catalog logs  <-  stats flops  <-  runs diagnose
    <-  verdicts  <-  launch report workload  <-  suite  <-  cli

workload/ runs inside the container with the standard library and NeMo only: it imports just
the modules in WORKLOAD_MAY_IMPORT and itself. Each backend is a package of workload/ (nemo2/,
bridge/, ...): it imports the shared workload modules and its own package, never another
backend's; the shared modules import no backend package (they reach a backend through the
table, workload/backends.py, which imports its face by name). A function-level import is
allowed only for the heavy or optional dependencies in LAZY_OK (and must say why in a comment).

perfgate.logs.formats: a format family module imports only FORMAT_SHARED and the standard
library, never another family; only the registry (the package's __init__) imports families.

Inside launch/, the code that runs in the allocation (IN_ALLOCATION) imports none of the
login node's (ALLOCATION_MAY_IMPORT), and the executors sit below the planner and the session
(EXECUTORS_MAY_IMPORT).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "perfgate"

LAYERS: dict[str, int] = {
    "perfgate": 0,
    "perfgate.errors": 0,
    "perfgate.atomic": 0,
    "perfgate.secrets": 0,
    "perfgate.hardware": 0,
    "perfgate.models": 0,
    "perfgate.model_arch": 0,  # ModelArch, the fields of a models.py entry
    "perfgate.charset": 0,
    "perfgate.inputs": 0,
    "perfgate.limits": 0,  # bounds on numbers, caps on sizes
    "perfgate.rowrecord": 0,  # the results.json record's keys (TypedDicts)
    "perfgate.nodenames": 0,  # the one grammar of node names, Slurm host lists
    "perfgate.notices": 0,  # the one-line warnings of the readers at the door
    "perfgate.typedjson": 0,  # JSON checked against declared types
    "perfgate.catalog": 1,
    "perfgate.logs": 1,
    "perfgate.stats": 2,
    "perfgate.flops": 2,
    "perfgate.runs": 3,
    "perfgate.diagnose": 3,
    "perfgate.history": 3,
    "perfgate.verdicts": 4,
    "perfgate.launch": 5,
    "perfgate.report": 5,
    "perfgate.workload": 5,
    "perfgate.suite": 6,
    "perfgate.cli": 7,  # the command package: one module per verb
    "perfgate.bisect": 7,  # perfgate bisect: runs the A/B gate's jobs without pytest
    "perfgate.__main__": 7,
}
WORKLOAD_MAY_IMPORT = (
    "perfgate.errors",
    "perfgate.atomic",
    "perfgate.secrets",
    "perfgate.hardware",
    "perfgate.models",
    "perfgate.model_arch",  # what models.py's entries are
    "perfgate.charset",  # what characters a value may hold
    "perfgate.inputs",  # regular files only (a FIFO never hangs a read)
    "perfgate.limits",  # bounds on numbers, caps on sizes
    "perfgate.nodenames",  # node names from SLURM_JOB_NODELIST and straggler reports
    "perfgate.notices",  # a left-out item's warning line
    "perfgate.typedjson",  # steps.json read back typed
    "perfgate.catalog",  # rows and their JSON schema
    "perfgate.logs",  # the series, steps.json, and the parser the command backend runs live
    "perfgate.workload",
)
# The job function and what it asks of the allocation: run on the job's first node.
IN_ALLOCATION = ("perfgate.launch.job", "perfgate.launch.allocation")
# What of the launcher they may import: not the login node's submission, states, sessions,
# planning or checks (nor submitit, which only runs them).
ALLOCATION_MAY_IMPORT = (
    "perfgate.launch.allocation",
    "perfgate.launch.jobcontext",  # the pickled context and the paths it derives
    "perfgate.launch.collect",  # the job reads its folder back as the session does
    "perfgate.launch.jobimages",
    "perfgate.launch.images",
    "perfgate.launch.runtimes",  # what each srun task runs
)
# The executors know jobs, not rows' plans or sessions: the planner and the session use them.
EXECUTORS_MAY_IMPORT = (
    "perfgate.launch.executors",
    "perfgate.launch.allocation",  # the launch line --dry-run shows is the one the job runs
    "perfgate.launch.jobcontext",
    "perfgate.launch.slurmstate",
    "perfgate.launch.types",
    "perfgate.launch.checks",
    "perfgate.launch.images",
    "submitit",  # what submits and renders the jobs
)
# Third-party modules a function may import lazily: heavy (NeMo, torch, Megatron, matplotlib)
# or not always installed (PyYAML inside a container, filelock where only stdlib is promised).
LAZY_OK = (
    "nemo",
    "nemo_run",
    "nemo_automodel",
    "megatron",
    "lightning",
    "torch",
    "fiddle",
    "matplotlib",
    "yaml",
    "filelock",
    "psycopg",  # libpq: loaded only when a PostgreSQL history is used, never for sqlite
    "perfgate.workload.nemo2.recipe",  # imports NeMo at its top
    "perfgate.workload.nemo2.paths",  # imports fiddle, nemo_run and Megatron at its top
    "perfgate.workload.nemo2.callback",  # imports Lightning at its top
    "perfgate.workload.recording",  # imports torch at its top
    "perfgate.workload.megatron_core.trainer",  # imports torch and Megatron-Core at its top
)

# What a log format family module may import: the declaration types, the field readers the
# families share, the step model. A family never sees another one, nor the parser around it.
FORMAT_SHARED = (
    "perfgate.logs.formats.base",
    "perfgate.logs.formats.fields",
    "perfgate.logs.series",
)
FORMAT_REGISTRY = "perfgate.logs.formats"


@dataclass(frozen=True)
class Import:
    """One perfgate import: the importing module, the imported module, where, and how."""

    module: str
    target: str
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, known: dict[str, Path]) -> str:
    """The module an import names: itself if it is one, else its package (a name in it)."""
    while name not in known and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def imports_of(module: str, path: Path, known: dict[str, Path]) -> list[Import]:
    """Every import statement of a module, including those inside functions and TYPE_CHECKING."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    out.append(Import(module, alias.name, child.lineno, in_function))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = module.split(".")
                    anchor = anchor if is_package else anchor[:-1]
                    anchor = anchor[: len(anchor) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    target = full if full in known else base
                    out.append(Import(module, target, child.lineno, in_function))
            visit(child, inside)

    visit(tree, False)
    return [
        Import(i.module, _resolve(i.target, known), i.line, i.in_function)
        if i.target.startswith("perfgate")
        else i
        for i in out
    ]


def layer_of(module: str) -> tuple[str, int]:
    """(layer key, level) of a perfgate module: its longest prefix in LAYERS."""
    for key in sorted(LAYERS, key=len, reverse=True):
        if module == key or module.startswith(key + "."):
            return key, LAYERS[key]
    raise AssertionError(f"{module}: not placed in any layer of tests/test_layering.py")


def all_imports() -> list[Import]:
    known = modules()
    return [i for m, p in known.items() for i in imports_of(m, p, known)]


def upward(imports: list[Import]) -> list[str]:
    bad = []
    for i in imports:
        if not i.target.startswith("perfgate") or i.target == i.module:
            continue
        (src_key, src), (dst_key, dst) = layer_of(i.module), layer_of(i.target)
        if dst > src:
            bad.append(f"{i.module}:{i.line} imports {i.target} ({dst_key} is above {src_key})")
    return bad


def circles(imports: list[Import]) -> list[list[str]]:
    """Every cycle of the module graph (one per strongly connected component)."""
    graph: dict[str, set[str]] = {}
    for i in imports:
        if i.target.startswith("perfgate") and i.target != i.module:
            graph.setdefault(i.module, set()).add(i.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strong(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def workload_escapes(imports: list[Import]) -> list[str]:
    return [
        f"{i.module}:{i.line} imports {i.target}"
        for i in imports
        if i.module.startswith("perfgate.workload")
        and i.target.startswith("perfgate")
        and not any(i.target == m or i.target.startswith(m + ".") for m in WORKLOAD_MAY_IMPORT)
    ]


def format_escapes(imports: list[Import]) -> list[str]:
    """Format modules importing beyond FORMAT_SHARED; families imported past the registry."""
    bad = []
    for i in imports:
        if not i.target.startswith("perfgate") or i.target == i.module:
            continue
        family = i.target.startswith(FORMAT_REGISTRY + ".") and i.target not in FORMAT_SHARED
        if i.module.startswith(FORMAT_REGISTRY + ".") and i.target not in FORMAT_SHARED:
            bad.append(f"{i.module}:{i.line} imports {i.target}")
        elif family and i.module != FORMAT_REGISTRY:
            bad.append(f"{i.module}:{i.line} imports {i.target} (use the registry)")
    return bad


def _within(module: str, names: tuple[str, ...]) -> bool:
    return any(module == m or module.startswith(m + ".") for m in names)


def launch_escapes(
    imports: list[Import], modules: tuple[str, ...], allowed: tuple[str, ...]
) -> list[str]:
    """Imports of the launcher (or submitit) by these modules outside what they may import."""
    return [
        f"{i.module}:{i.line} imports {i.target}"
        for i in imports
        if _within(i.module, modules)
        and (_within(i.target, ("perfgate.launch", "submitit")) and i.target != "perfgate.launch")
        and not _within(i.target, allowed)
    ]


def lazy_imports(imports: list[Import]) -> list[str]:
    return [
        f"{i.module}:{i.line} imports {i.target} inside a function"
        for i in imports
        if i.in_function
        and not any(i.target == m or i.target.startswith(m + ".") for m in LAZY_OK)
        and i.target not in sys.stdlib_module_names  # e.g. `import torch` guarded by suppress
    ]


# Packages that may import pytest: the plugin and the pytest-html report. Verdicts, statistics
# and the launcher are plain functions a script or `perfgate` can call without a session.
PYTEST_MAY_IMPORT = ("perfgate.suite", "perfgate.report")


def pytest_escapes(imports: list[Import]) -> list[str]:
    return [
        f"{i.module}:{i.line} imports {i.target}"
        for i in imports
        if i.target.split(".")[0] in ("pytest", "_pytest", "pytest_html")
        and not any(i.module == p or i.module.startswith(p + ".") for p in PYTEST_MAY_IMPORT)
    ]


def test_only_the_suite_and_the_report_import_pytest() -> None:
    assert pytest_escapes(all_imports()) == []


def backend_packages() -> list[str]:
    """Every package of perfgate.workload: each is one backend."""
    root = PACKAGE / "workload"
    return sorted(
        f"perfgate.workload.{d.name}" for d in root.iterdir() if (d / "__init__.py").exists()
    )


def _package_of(module: str, packages: list[str]) -> str | None:
    return next((p for p in packages if module == p or module.startswith(p + ".")), None)


def backend_crossings(imports: list[Import], packages: list[str]) -> list[str]:
    """Imports of a backend package from another backend's package or from a shared module."""
    bad = []
    for i in imports:
        if not i.module.startswith("perfgate.workload"):
            continue
        target = _package_of(i.target, packages)
        source = _package_of(i.module, packages)
        if target is None or source == target:
            continue
        where = f"backend {source}" if source else "a shared workload module"
        bad.append(f"{i.module}:{i.line} imports {i.target} ({where})")
    return bad


def test_every_module_has_a_layer() -> None:
    for module in modules():
        layer_of(module)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert upward(all_imports()) == []


def test_no_import_circles() -> None:
    assert circles(all_imports()) == []


def test_the_workload_imports_only_what_runs_inside_the_container() -> None:
    assert workload_escapes(all_imports()) == []


def test_log_format_families_import_only_the_shared_modules() -> None:
    assert format_escapes(all_imports()) == []


def test_the_code_in_the_allocation_imports_nothing_of_the_login_node() -> None:
    assert launch_escapes(all_imports(), IN_ALLOCATION, ALLOCATION_MAY_IMPORT) == []


def test_the_executors_sit_below_the_planner_and_the_session() -> None:
    executors = ("perfgate.launch.executors",)
    assert launch_escapes(all_imports(), executors, EXECUTORS_MAY_IMPORT) == []


def test_function_level_imports_only_for_heavy_or_optional_dependencies() -> None:
    assert lazy_imports(all_imports()) == []


def test_a_backend_imports_no_other_backend_and_shared_modules_no_backend() -> None:
    packages = backend_packages()
    assert {"perfgate.workload.nemo2", "perfgate.workload.bridge"} <= set(packages)
    assert backend_crossings(all_imports(), packages) == []


def test_the_rules_catch_what_they_forbid() -> None:
    """The checks above would fail: synthetic imports break each rule once."""
    fake = [
        Import("perfgate.catalog.rows", "perfgate.verdicts.single", 1, False),  # upward
        Import("perfgate.logs.series", "perfgate.logs.scan", 2, False),  # a circle ...
        Import("perfgate.logs.scan", "perfgate.logs.series", 3, False),  # ... of two
        Import("perfgate.workload.spec", "perfgate.launch.planning", 4, False),  # container
        Import("perfgate.suite.state", "perfgate.launch", 5, True),  # function-level
        Import("perfgate.workload.bridge.job", "perfgate.workload.nemo2.models", 6, False),
        Import("perfgate.workload.describe", "perfgate.workload.nemo2.face", 7, True),
        Import("perfgate.workload.nemo2.job", "perfgate.workload.nemo2.face", 8, False),  # own
        Import("perfgate.verdicts.single", "pytest", 9, False),  # pytest outside the suite
        Import("perfgate.logs.formats.nemo2", "perfgate.logs.formats.megatron", 10, False),
        Import("perfgate.logs.assemble", "perfgate.logs.formats.torchtitan", 11, False),
        Import("perfgate.launch.allocation.slurm", "perfgate.launch.slurmstate", 12, False),
        Import("perfgate.launch.executors.local", "perfgate.launch.session", 13, False),
    ]
    assert upward(fake[:1]) == [
        "perfgate.catalog.rows:1 imports perfgate.verdicts.single "
        "(perfgate.verdicts is above perfgate.catalog)"
    ]
    assert circles(fake[1:3]) == [["perfgate.logs.scan", "perfgate.logs.series"]]
    assert workload_escapes(fake) == ["perfgate.workload.spec:4 imports perfgate.launch.planning"]
    assert lazy_imports(fake) == [
        "perfgate.suite.state:5 imports perfgate.launch inside a function",
        "perfgate.workload.describe:7 imports perfgate.workload.nemo2.face inside a function",
    ]
    packages = ["perfgate.workload.bridge", "perfgate.workload.nemo2"]
    assert backend_crossings(fake, packages) == [
        "perfgate.workload.bridge.job:6 imports perfgate.workload.nemo2.models "
        "(backend perfgate.workload.bridge)",
        "perfgate.workload.describe:7 imports perfgate.workload.nemo2.face "
        "(a shared workload module)",
    ]
    assert pytest_escapes(fake) == ["perfgate.verdicts.single:9 imports pytest"]
    assert format_escapes(fake) == [
        "perfgate.logs.formats.nemo2:10 imports perfgate.logs.formats.megatron",
        "perfgate.logs.assemble:11 imports perfgate.logs.formats.torchtitan (use the registry)",
    ]
    assert launch_escapes(fake, IN_ALLOCATION, ALLOCATION_MAY_IMPORT) == [
        "perfgate.launch.allocation.slurm:12 imports perfgate.launch.slurmstate"
    ]
    assert launch_escapes(fake, ("perfgate.launch.executors",), EXECUTORS_MAY_IMPORT) == [
        "perfgate.launch.executors.local:13 imports perfgate.launch.session"
    ]


def test_relative_and_package_imports_resolve_to_modules(tmp_path: Path) -> None:
    known = modules()
    path = tmp_path / "x.py"
    path.write_text(
        "from perfgate.logs import stepfile, parse_files\nfrom perfgate import catalog\n"
        "def f():\n    from perfgate.catalog.rows import Row\n"
    )
    found = [(i.target, i.in_function) for i in imports_of("perfgate.suite.x", path, known)]
    assert found == [
        ("perfgate.logs.stepfile", False),
        ("perfgate.logs", False),
        ("perfgate.catalog", False),
        ("perfgate.catalog.rows", True),
    ]


# Third-party packages the workload must never need: it runs in any container's Python.
NOT_IN_CONTAINERS = ("filelock", "submitit", "pytest", "pytest_html", "pytest_benchmark")


@pytest.mark.parametrize(
    "module",
    [
        "perfgate.workload.dispatch",
        "perfgate.workload.command.job",
        "perfgate.workload.spec",
        "perfgate.workload.validate",
        "perfgate.workload.describe",
        "perfgate.workload.backends",
        "perfgate.workload.nemo2.face",
        "perfgate.workload.bridge.face",
        "perfgate.workload.automodel.face",
        "perfgate.workload.command.face",
        "perfgate.workload.megatron_core.face",
        "perfgate.workload.megatron_core.job",  # torch loads in train(), after the env
    ],
)
def test_the_workload_imports_with_the_standard_library_alone(module: str) -> None:
    """Import it in a fresh interpreter where perfgate's own dependencies cannot be found."""
    block = (
        "import sys\n"
        f"for name in {NOT_IN_CONTAINERS!r}:\n"
        "    sys.modules[name] = None  # `import name` now raises ImportError\n"
        "before = set(sys.modules)\n"
        f"import {module}\n"
        "new = {m.split('.')[0] for m in set(sys.modules) - before if sys.modules[m]}\n"
        "print(' '.join(sorted(new - set(sys.stdlib_module_names))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, check=False, cwd=SRC
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["perfgate"]


TESTS = Path(__file__).resolve().parent
ROW_FACTORY = TESTS / "rowfactory.py"


def row_constructions(root: Path = TESTS) -> list[str]:
    """Every call of catalog.Row(...) in the tests outside rowfactory.py (file:line)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path == ROW_FACTORY:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            f = node.func if isinstance(node, ast.Call) else None
            name = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            if name == "Row":
                found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_the_tests_make_rows_in_one_factory(tmp_path: Path) -> None:
    """tests/rowfactory.py is where a test gets a Row (make_row, as_row, command_row); a
    row from JSON goes through catalog.row_from_dict, a changed one through replace()."""
    assert row_constructions() == []
    (tmp_path / "test_x.py").write_text("from perfgate.catalog import Row\nr = Row(id='x')\n")
    assert row_constructions(tmp_path) == ["test_x.py:2"]  # the check sees one
