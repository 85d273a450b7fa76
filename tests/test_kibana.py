"""Kibana saved objects: well-formed, self-consistent, and naming only fields the audit mappings have."""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

ROOT = Path(__file__).resolve().parent.parent
NDJSON = ROOT / "kibana" / "esbubble.ndjson"


def template_dir() -> Path:
    for candidate in (ROOT / "index_templates", ROOT / "esbubble" / "index_templates"):
        if (candidate / "component-traces-mappings.json").exists():
            return candidate
    raise AssertionError("no component-traces-mappings.json in index_templates/")


def field_types(mapping_file: str) -> dict[str, str]:
    """Dotted field path -> mapping type (objects included as 'object')."""
    properties = json.loads((template_dir() / mapping_file).read_text())["template"]["mappings"]["properties"]
    found: dict[str, str] = {}

    def walk(props: dict[str, Any], prefix: str) -> None:
        for name, spec in props.items():
            path = prefix + name
            found[path] = spec.get("type", "object")
            walk(spec.get("properties", {}), path + ".")
            for sub in spec.get("fields", {}):
                found[f"{path}.{sub}"] = spec["fields"][sub]["type"]

    walk(properties, "")
    return found


def mapping_for(data_view_id: str) -> dict[str, str]:
    return field_types(
        "component-traces-mappings.json"
        if data_view_id.endswith("traces")
        else "component-runs-mappings.json"
    )


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return [json.loads(line) for line in NDJSON.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_type(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["type"] == kind]


def test_every_object_has_the_saved_object_shape_and_a_unique_id(objects: list[dict[str, Any]]) -> None:
    assert objects
    for obj in objects:
        assert set(obj) == {"type", "id", "attributes", "references"}
        assert obj["type"] in {"index-pattern", "visualization", "search", "dashboard"}
        assert obj["attributes"]["title"]
    ids = [(o["type"], o["id"]) for o in objects]
    assert len(ids) == len(set(ids))


def test_there_is_a_data_view_over_traces_and_one_over_runs_with_a_date_time_field(
    objects: list[dict[str, Any]],
) -> None:
    views = {o["attributes"]["title"]: o for o in by_type(objects, "index-pattern")}
    assert set(views) == {"esbubble-traces", "esbubble-runs"}
    for view in views.values():
        assert mapping_for(view["id"])[view["attributes"]["timeFieldName"]] == "date"


def test_every_reference_resolves_inside_the_file(objects: list[dict[str, Any]]) -> None:
    known = {(o["type"], o["id"]) for o in objects}
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in known, f"{obj['id']} references missing {ref}"
    dashboard = by_type(objects, "dashboard")[0]
    panels = json.loads(dashboard["attributes"]["panelsJSON"])
    ref_names = {ref["name"] for ref in dashboard["references"]}
    assert {panel["panelRefName"] for panel in panels} == ref_names
    assert len(panels) == 4


def test_dashboard_covers_rejections_over_time_tokens_per_section_and_decisions_per_run(
    objects: list[dict[str, Any]],
) -> None:
    titles = {o["attributes"]["title"] for o in by_type(objects, "visualization")}
    assert titles == {
        "esbubble · rejection reasons over time",
        "esbubble · tokens per section",
        "esbubble · decisions per run",
    }


def named_fields(obj: dict[str, Any]) -> set[str]:
    """Every field a saved object names: aggregation fields, KQL query fields, columns and sort keys."""
    attributes = obj["attributes"]
    fields: set[str] = set()
    if "visState" in attributes:
        for agg in json.loads(attributes["visState"])["aggs"]:
            if "field" in agg["params"]:
                fields.add(agg["params"]["field"])
    search = json.loads(attributes["kibanaSavedObjectMeta"]["searchSourceJSON"])
    fields.update(re.findall(r"([\w@.]+)\s*:", search.get("query", {}).get("query", "")))
    fields.update(attributes.get("columns", []))
    fields.update(key for key, _ in attributes.get("sort", []))
    return fields


def test_every_field_named_exists_in_the_mapping_of_its_data_view(objects: list[dict[str, Any]]) -> None:
    checked = 0
    for obj in objects:
        if obj["type"] not in {"visualization", "search"}:
            continue
        (index_ref,) = [r for r in obj["references"] if r["type"] == "index-pattern"]
        mapping = mapping_for(index_ref["id"])
        for field in named_fields(obj):
            assert field in mapping, f"{obj['id']} names {field!r}, absent from the {index_ref['id']} mapping"
            assert mapping[field] != "object", f"{obj['id']} aggregates on object field {field!r}"
            checked += 1
    assert checked >= 12


@pytest.fixture(scope="module")
def setup_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kibana_setup", ROOT / "scripts" / "kibana_setup.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        answer = {"success": True, "successCount": 5} if "_import" in self.path else {"data_view": {}}
        payload = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, dict[str, str], bytes]]]]:
    """A local HTTP endpoint that records what the setup script sends (it cannot reach a real Kibana here)."""
    _Recorder.seen = []
    server = HTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", _Recorder.seen
    finally:
        server.shutdown()
        server.server_close()


def test_setup_creates_prefixed_data_views_then_imports_the_rest_with_kbn_xsrf(
    setup_script: ModuleType,
    recorder: tuple[str, list[tuple[str, dict[str, str], bytes]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, seen = recorder
    assert setup_script.main(["--kibana-url", url, "--prefix", "team-a", "--api-key", "k3y"]) == 0
    paths = [path for path, _, _ in seen]
    assert paths == [
        "/api/data_views/data_view",
        "/api/data_views/data_view",
        "/api/saved_objects/_import?overwrite=true",
    ]
    assert all(headers["kbn-xsrf"] and headers["authorization"] == "ApiKey k3y" for _, headers, _ in seen)
    titles = sorted(json.loads(body)["data_view"]["title"] for _, _, body in seen[:2])
    assert titles == ["team-a-runs", "team-a-traces"]
    imported = [json.loads(line) for line in seen[2][2].decode().splitlines() if line.startswith("{")]
    kinds = sorted(obj["type"] for obj in imported)
    assert kinds == ["dashboard", "search", "visualization", "visualization", "visualization"]
    assert json.loads(capsys.readouterr().out) == {
        "data_views": ["team-a-traces", "team-a-runs"],
        "imported": 5,
    }


def test_setup_reports_an_unreachable_kibana_in_one_line(setup_script: ModuleType) -> None:
    with pytest.raises(SystemExit, match=r"cannot reach Kibana at http://127\.0\.0\.1:9: .*docker compose"):
        setup_script.main(["--kibana-url", "http://127.0.0.1:9"])
