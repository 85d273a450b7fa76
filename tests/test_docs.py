"""The docs are checked against the code: CLI reference, module map and layers, links, README, citations."""

from __future__ import annotations

import ast
import pkgutil
import re
import shlex
from pathlib import Path
from types import ModuleType

import click
import pytest
from click.testing import CliRunner
from repo_scripts import load_script

import esbubble
from esbubble.store.connection import Store

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"
ARCHITECTURE = DOCS / "architecture.md"


@pytest.fixture(scope="module")
def gen_cli_docs() -> ModuleType:
    return load_script("gen_cli_docs")


def command_paths(command: click.Command, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every visible command below ``command`` as its argument path, found through click's own API."""
    found = [path]
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                found += command_paths(sub, (*path, name))
    return found


def sections(markdown: str) -> dict[str, str]:
    """Level-2 headings of a page and the text under each."""
    parts = re.split(r"^## (.+)$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


# --- docs/cli.md ---------------------------------------------------------------------------------------


def test_cli_reference_is_what_the_generator_writes(gen_cli_docs: ModuleType) -> None:
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == gen_cli_docs.render(), (
        "docs/cli.md is stale: run python scripts/gen_cli_docs.py"
    )


def test_every_command_and_subcommand_has_a_section_with_its_help(gen_cli_docs: ModuleType) -> None:
    root = gen_cli_docs.root_command()
    paths = command_paths(root)
    assert len(paths) > 10 and ("traces", "push") in paths and ("engine", "status") in paths
    documented = sections((DOCS / "cli.md").read_text(encoding="utf-8"))
    assert sorted(documented) == sorted(" ".join(("esbubble", *path)) for path in paths)
    for path in paths:
        shown = CliRunner().invoke(
            root, [*path, "--help"], prog_name="esbubble", terminal_width=80, max_content_width=80
        )
        assert shown.exit_code == 0, shown.output
        assert shown.output.startswith(f"Usage: {' '.join(('esbubble', *path))} ")
        assert shown.output.rstrip() in documented[" ".join(("esbubble", *path))]


# --- docs/architecture.md ------------------------------------------------------------------------------

LAYERS = ("Records", "Pure core", "Delivery", "Store", "Ingest", "Application")
# Layers above the store may not import the client at all.
ENGINE_PACKAGES = ("elasticsearch", "elastic_transport")


def package_modules() -> set[str]:
    """Every module of the package as its path under ``esbubble/`` (a package as its ``__init__.py``)."""
    found = {"__init__.py"}
    for info in pkgutil.walk_packages(esbubble.__path__, "esbubble."):
        relative = info.name.removeprefix("esbubble.").replace(".", "/")
        found.add(f"{relative}/__init__.py" if info.ispkg else f"{relative}.py")
    return found


def module_map() -> dict[str, list[str]]:
    """The modules docs/architecture.md lists, by layer: the first cell of each table row."""
    layers = sections(ARCHITECTURE.read_text(encoding="utf-8"))
    return {
        layer: re.findall(r"^\| `([^`]+\.py)` \|", layers.get(layer, ""), flags=re.MULTILINE)
        for layer in LAYERS
    }


# Each layer is a folder of the package (the records sit at its top).
LAYER_FOLDERS = {
    "Records": "",
    "Pure core": "core/",
    "Delivery": "delivery/",
    "Store": "store/",
    "Ingest": "ingest/",
    "Application": "app/",
}


def test_each_layer_is_one_folder_of_the_package() -> None:
    misplaced = []
    for layer, modules in module_map().items():
        folder = LAYER_FOLDERS[layer]
        for module in modules:
            home = module.rpartition("/")[0] + "/" if "/" in module else ""
            if home != folder:
                misplaced.append(f"{module} is listed under {layer} but lives in esbubble/{home}")
    assert misplaced == []


def test_architecture_names_every_module_exactly_once() -> None:
    named = [module for modules in module_map().values() for module in modules]
    assert len(named) == len(set(named)), "a module is listed twice"
    modules = package_modules()
    assert len(modules) > 40
    assert sorted(modules - set(named)) == [], "modules missing from docs/architecture.md"
    assert sorted(set(named) - modules) == [], "docs/architecture.md names modules that do not exist"


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (function bodies and TYPE_CHECKING blocks too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def dotted(module: str) -> str:
    return "esbubble." + module.removesuffix(".py").removesuffix("/__init__").replace("/", ".")


def test_each_layer_imports_no_layer_that_builds_on_it_and_only_the_store_reaches_the_engine() -> None:
    by_layer = module_map()
    layer_of = {dotted(m): LAYERS.index(layer) for layer, modules in by_layer.items() for m in modules}
    layer_of["esbubble"] = 0
    wrong = []
    for layer, modules in by_layer.items():
        rank = LAYERS.index(layer)
        for module in modules:
            for imported in imported_modules(ROOT / "esbubble" / module):
                if imported.split(".")[0] in ENGINE_PACKAGES and rank < LAYERS.index("Store"):
                    wrong.append(f"{module} ({layer}) imports {imported}")
                elif layer_of.get(imported, -1) > rank:
                    wrong.append(f"{module} ({layer}) imports {imported} ({LAYERS[layer_of[imported]]})")
    assert wrong == []


def test_the_layer_check_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from esbubble.store.retrieve import retrieve\n    import elasticsearch\n")
    assert {"esbubble.store.retrieve", "elasticsearch"} <= imported_modules(bad)


# --- links, README -------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.MULTILINE | re.DOTALL)
    return {slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.MULTILINE)}


PAGES = [README, *sorted(DOCS.glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves_to_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in anchors(linked)):
            broken.append(target)
    assert broken == []


def test_readme_is_short_and_its_quick_start_is_make_demo_and_make_test() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    quick = sections(text)["Quick start"]
    commands = [line.split("#")[0].strip() for line in re.findall(r"^make .*$", quick, flags=re.MULTILINE)]
    assert commands == ["make demo", "make test"]
    targets = re.findall(r"^([a-z]+):", (ROOT / "Makefile").read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert {"demo", "test"} <= set(targets)
    for page in ("algorithm", "operations", "kibana", "cli", "architecture", "evaluation", "benchmarks"):
        assert f"(docs/{page}.md)" in text


def readme_commands() -> list[list[str]]:
    """The ``esbubble`` command lines of the README's shell blocks, as argument lists."""
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [
        shlex.split(line, comments=True)[1:]
        for block in blocks
        for line in block.splitlines()
        if line.startswith("esbubble ")
    ]


@pytest.mark.integration
@pytest.mark.slow
def test_readme_worked_example_runs_as_written(
    bare_store: Store, monkeypatch: pytest.MonkeyPatch, gen_cli_docs: ModuleType
) -> None:
    """Every README command, in order, on the sample data (RUN_ID: the run the bubble before it made)."""
    monkeypatch.chdir(ROOT)
    assert bare_store.settings.url is not None
    flags = ["--url", bare_store.settings.url, "--prefix", bare_store.names.prefix]
    commands = readme_commands()
    assert [args[0] for args in commands] == ["init", "ingest", "bubble", "trace"]
    root, run_id = gen_cli_docs.root_command(), None
    for written in commands:
        args = [run_id if arg == "RUN_ID" else arg for arg in written]
        result = CliRunner().invoke(root, [*flags, *args], prog_name="esbubble", catch_exceptions=False)
        assert result.exit_code == 0, (args, result.output)
        if args[0] == "bubble":
            run_id = re.findall(r"^run id: (\S+)$", result.stdout, flags=re.MULTILINE)[-1]
        if args[0] == "trace":
            assert "passed_all_gates" in result.stdout and run_id in result.stdout


# --- citations -----------------------------------------------------------------------------------------

# Files outside the repository a comment or doc must not point at: notes, the paper's or articles'
# local copies, other checkouts. Cite the paper ("Context Bubble", eq. N) or docs/ instead. Each
# pattern is written so that this file does not match it.
OUTSIDE = re.compile(
    r"DESIGN\.md|STYLE\.md|\bseeds?[ _]?0\d\d|seeds[/\\]|\.\./shared|/work[/](shared|main|wt)\b",
    flags=re.IGNORECASE,
)
CITING = [
    README,
    ROOT / "Makefile",
    *(
        path
        for folder in ("esbubble", "tests", "scripts", "benchmarks", "docs")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in {".py", ".md", ".sh", ".toml"}
    ),
]


def test_comments_and_docs_cite_nothing_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in CITING
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert len(CITING) > 100
    assert found == []


@pytest.mark.parametrize(
    "line",
    # Assembled, so that this file holds none of them.
    [
        "# eq. 5 of DESIGN" + ".md",
        '"""Repair (seed ' + '002)."""',
        "see ../" + "shared/notes",
        "Seeds" + "/000.txt",
    ],
)
def test_the_citation_check_catches_outside_references(line: str) -> None:
    assert OUTSIDE.search(line)
