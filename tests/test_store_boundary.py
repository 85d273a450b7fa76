"""Only the store talks to Elasticsearch: no module outside ``esbubble/store/`` imports the client."""

from __future__ import annotations

import ast
from pathlib import Path

import esbubble

PACKAGE = Path(esbubble.__file__).parent
CLIENT_PACKAGES = ("elasticsearch", "elastic_transport")


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names.add(node.module)
    return names


def _is_client(module: str) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in CLIENT_PACKAGES)


def client_importers(root: Path) -> dict[str, set[str]]:
    """Module path (relative to ``root``) → the client modules it imports, for every module that does."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        client = {m for m in _imported(ast.parse(path.read_text(encoding="utf-8"))) if _is_client(m)}
        if client:
            found[path.relative_to(root).as_posix()] = client
    return found


def test_only_the_store_imports_the_elasticsearch_client() -> None:
    importers = client_importers(PACKAGE)
    assert "store/errors.py" in importers  # the walk sees the store's own imports
    outside = {module: names for module, names in importers.items() if not module.startswith("store/")}
    assert outside == {}


def test_the_walk_finds_every_form_of_import(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import elasticsearch\n", encoding="utf-8")
    (tmp_path / "b.py").write_text("from elastic_transport import TransportError\n", encoding="utf-8")
    (tmp_path / "c.py").write_text("def f():\n    from elasticsearch.helpers import scan\n", encoding="utf-8")
    (tmp_path / "d.py").write_text("import elasticsearch_dsl_like_name_not_client\n", encoding="utf-8")
    assert client_importers(tmp_path) == {
        "a.py": {"elasticsearch"},
        "b.py": {"elastic_transport"},
        "c.py": {"elasticsearch.helpers"},
    }
