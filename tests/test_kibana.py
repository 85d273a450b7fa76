"""Kibana saved objects: well-formed, self-consistent, and naming only fields the audit mappings have."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
from repo_scripts import load_script

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


# The form of a Kibana 9.x saved-objects export: these keys on every object, and per type the
# model version 9.x writes (no newer than 9.0 knows, so every 9.x imports and migrates it).
EXPORT_KEYS = {
    "attributes",
    "coreMigrationVersion",
    "id",
    "managed",
    "references",
    "type",
    "typeMigrationVersion",
}
TYPE_MIGRATION_VERSIONS = {
    "index-pattern": "8.0.0",
    "lens": "8.9.0",
    "search": "10.5.0",
    "dashboard": "10.2.0",
}


def test_every_object_has_the_export_form_with_migration_versions_and_a_unique_id(
    objects: list[dict[str, Any]],
) -> None:
    assert [o["type"] for o in objects] == [
        "index-pattern",
        "index-pattern",
        "lens",
        "lens",
        "lens",
        "search",
        "search",
        "dashboard",
    ]
    for obj in objects:
        assert set(obj) == EXPORT_KEYS, obj["id"]
        assert obj["coreMigrationVersion"] == "8.8.0"
        assert obj["typeMigrationVersion"] == TYPE_MIGRATION_VERSIONS[obj["type"]]
        assert obj["managed"] is False
        assert obj["attributes"]["title"]
        for ref in obj["references"]:
            assert set(ref) == {"id", "name", "type"}
    ids = [(o["type"], o["id"]) for o in objects]
    assert len(ids) == len(set(ids))


def test_lines_are_compact_sorted_json_as_an_export_writes_them() -> None:
    for line in NDJSON.read_text(encoding="utf-8").splitlines():
        assert line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_the_file_is_what_the_generator_writes(setup_generator: ModuleType) -> None:
    assert NDJSON.read_text(encoding="utf-8") == setup_generator.render(setup_generator.build())


def test_there_is_a_data_view_over_traces_and_one_over_runs_with_a_date_time_field(
    objects: list[dict[str, Any]],
) -> None:
    views = {o["attributes"]["title"]: o for o in by_type(objects, "index-pattern")}
    assert set(views) == {"esbubble-traces", "esbubble-runs"}
    for view in views.values():
        assert mapping_for(view["id"])[view["attributes"]["timeFieldName"]] == "date"
        for encoded in ("fieldAttrs", "fieldFormatMap", "fields", "runtimeFieldMap", "sourceFilters"):
            json.loads(view["attributes"][encoded])


def test_every_reference_resolves_inside_the_file_with_the_right_type(objects: list[dict[str, Any]]) -> None:
    known = {(o["type"], o["id"]) for o in objects}
    for obj in objects:
        for ref in obj["references"]:
            assert (ref["type"], ref["id"]) in known, f"{obj['id']} references missing {ref}"


def test_dashboard_panels_match_its_references_one_to_one(objects: list[dict[str, Any]]) -> None:
    (dashboard,) = by_type(objects, "dashboard")
    panels = json.loads(dashboard["attributes"]["panelsJSON"])
    refs = {ref["name"]: ref for ref in dashboard["references"]}
    assert len(panels) == len(refs) == 5
    for panel in panels:
        assert panel["gridData"]["i"] == panel["panelIndex"]
        ref = refs[f"{panel['panelIndex']}:{panel['panelRefName']}"]
        assert ref["type"] == panel["type"]
    assert sorted(ref["type"] for ref in refs.values()) == ["lens", "lens", "lens", "search", "search"]
    for encoded in ("optionsJSON", "kibanaSavedObjectMeta"):
        value = dashboard["attributes"][encoded]
        json.loads(value if isinstance(value, str) else value["searchSourceJSON"])


def test_dashboard_panels_do_not_overlap_on_the_48_column_grid(objects: list[dict[str, Any]]) -> None:
    (dashboard,) = by_type(objects, "dashboard")
    cells: set[tuple[int, int]] = set()
    for panel in json.loads(dashboard["attributes"]["panelsJSON"]):
        grid = panel["gridData"]
        assert grid["x"] + grid["w"] <= 48
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & area, panel["panelIndex"]
        cells |= area


def test_dashboard_covers_rejections_over_time_tokens_per_section_and_decisions_per_run(
    objects: list[dict[str, Any]],
) -> None:
    titles = {
        o["attributes"]["title"]: o["attributes"]["visualizationType"] for o in by_type(objects, "lens")
    }
    assert titles == {
        "esbubble · rejection reasons over time": "lnsXY",
        "esbubble · tokens per section": "lnsXY",
        "esbubble · decisions per run": "lnsDatatable",
    }


def lens_layers(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    layers: dict[str, dict[str, Any]] = obj["attributes"]["state"]["datasourceStates"]["formBased"]["layers"]
    return layers


def test_every_lens_layer_is_wired_to_a_data_view_and_its_visualization(
    objects: list[dict[str, Any]],
) -> None:
    for obj in by_type(objects, "lens"):
        state = obj["attributes"]["state"]
        for layer_id, layer in lens_layers(obj).items():
            (ref,) = [
                r for r in obj["references"] if r["name"] == f"indexpattern-datasource-layer-{layer_id}"
            ]
            assert ref["type"] == "index-pattern"
            assert layer["columnOrder"] and set(layer["columnOrder"]) == set(layer["columns"])
            for column in layer["columns"].values():
                order = column.get("params", {}).get("orderBy", {})
                if order.get("type") == "column":
                    assert not layer["columns"][order["columnId"]]["isBucketed"]
        visualization = state["visualization"]
        vis_layers = visualization.get("layers", [visualization])
        for vis_layer in vis_layers:
            columns = lens_layers(obj)[vis_layer["layerId"]]["columns"]
            accessors = [
                *vis_layer.get("accessors", []),
                vis_layer.get("xAccessor"),
                vis_layer.get("splitAccessor"),
            ]
            accessors += [c["columnId"] for c in vis_layer.get("columns", [])]
            assert all(a in columns for a in accessors if a), obj["id"]


def query_fields(kql: str) -> set[str]:
    return set(re.findall(r"([\w@.]+)\s*(?::|<=|>=|<|>)", kql))


def named_fields(obj: dict[str, Any]) -> set[str]:
    """Every field a saved object names: Lens column fields, KQL query fields, columns and sort keys."""
    attributes = obj["attributes"]
    fields: set[str] = set()
    if obj["type"] == "lens":
        for layer in lens_layers(obj).values():
            fields.update(
                c["sourceField"] for c in layer["columns"].values() if c["sourceField"] != "___records___"
            )
        fields.update(query_fields(attributes["state"]["query"]["query"]))
    if "kibanaSavedObjectMeta" in attributes:
        search = json.loads(attributes["kibanaSavedObjectMeta"]["searchSourceJSON"])
        fields.update(query_fields(search.get("query", {}).get("query", "")))
    fields.update(attributes.get("columns", []))
    fields.update(key for key, _ in attributes.get("sort", []))
    return fields


def test_a_search_lists_the_engines_first_ten_a_bubble_dropped_with_the_reason(
    objects: list[dict[str, Any]],
) -> None:
    """Without gold, the decisions where a bubble may do worse than the engine's own order."""
    (dropped,) = [o for o in by_type(objects, "search") if o["id"] == "esbubble-dropped-engine-top"]
    search = json.loads(dropped["attributes"]["kibanaSavedObjectMeta"]["searchSourceJSON"])
    query = 'es_rank <= 10 and final_decision : "rejected" and not variant : "engine_topk"'
    assert search["query"] == {"language": "kuery", "query": query}  # the baseline's own cuts left out
    assert query_fields(query) == {"es_rank", "final_decision", "variant"}
    assert {"run_id", "chunk_id", "es_rank", "final_reason"} <= set(dropped["attributes"]["columns"])
    assert [r["id"] for r in dropped["references"]] == ["esbubble-traces"]
    (dashboard,) = by_type(objects, "dashboard")
    assert "esbubble-dropped-engine-top" in {r["id"] for r in dashboard["references"]}


def test_every_field_named_exists_in_the_mapping_of_its_data_view(objects: list[dict[str, Any]]) -> None:
    checked = 0
    for obj in objects:
        if obj["type"] not in {"lens", "search"}:
            continue
        (view,) = {r["id"] for r in obj["references"] if r["type"] == "index-pattern"}
        mapping = mapping_for(view)
        for field in named_fields(obj):
            assert field in mapping, f"{obj['id']} names {field!r}, absent from the {view} mapping"
            assert mapping[field] != "object", f"{obj['id']} aggregates on object field {field!r}"
            checked += 1
    assert checked >= 15


def test_nothing_on_the_traces_data_view_names_the_query_which_lives_in_run_manifests(
    objects: list[dict[str, Any]],
) -> None:
    for obj in objects:
        if {r["id"] for r in obj["references"]} == {"esbubble-traces"}:
            assert not {f for f in named_fields(obj) if f.split(".")[0] == "query"}, obj["id"]


@pytest.fixture(scope="module")
def setup_generator() -> ModuleType:
    return load_script("make_kibana_objects")


@pytest.fixture(scope="module")
def setup_script() -> ModuleType:
    return load_script("kibana_setup")


class _Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        # Kibana answers an import with how many objects it imported: every object of the upload here
        objects = sum(1 for line in body.decode(errors="replace").splitlines() if line.startswith("{"))
        answer = {"success": True, "successCount": objects} if "_import" in self.path else {"data_view": {}}
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
    assert kinds == ["dashboard", "lens", "lens", "lens", "search", "search"]
    assert json.loads(capsys.readouterr().out) == {
        "data_views": ["team-a-traces", "team-a-runs"],
        "imported": 6,
    }


def test_setup_reports_an_unreachable_kibana_in_one_line(setup_script: ModuleType) -> None:
    with pytest.raises(SystemExit, match=r"cannot reach Kibana at http://127\.0\.0\.1:9: .*docker compose"):
        setup_script.main(["--kibana-url", "http://127.0.0.1:9"])


def test_compose_file_has_no_settings_kibana_or_elasticsearch_would_refuse() -> None:
    yaml = pytest.importorskip("yaml")
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
    kibana_env = [entry.split("=", 1)[0] for entry in services["kibana"]["environment"]]
    assert "XPACK_SECURITY_ENABLED" not in kibana_env  # removed in Kibana 8.0: the container refuses to start
    es = services["elasticsearch"]
    memory_lock = "bootstrap.memory_lock=true" in es["environment"]
    assert ("memlock" in es.get("ulimits", {})) == memory_lock


KIBANA_IMAGE = "docker.elastic.co/kibana/kibana:9.5.0"
ES_IMAGE = "docker.elastic.co/elasticsearch/elasticsearch:9.5.0"


def _kibana_get(url: str, path: str) -> Any:
    import urllib.request

    with urllib.request.urlopen(url + path, timeout=10) as response:
        return json.loads(response.read())


def _wait_until_available(url: str, seconds: float) -> None:
    import time
    import urllib.error

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if _kibana_get(url, "/api/status")["status"]["overall"]["level"] == "available":
                return
        except (urllib.error.URLError, OSError, KeyError, ValueError):
            pass
        time.sleep(3)
    raise AssertionError(f"Kibana at {url} not available after {seconds:.0f} s")


@pytest.fixture(scope="module")
def kibana_url() -> Iterator[str]:
    """Elasticsearch and Kibana 9.x in Docker (testcontainers); skipped where no Docker engine answers."""
    docker = pytest.importorskip("docker")
    import requests

    try:
        docker.from_env().ping()
    except (docker.errors.DockerException, requests.RequestException, OSError) as error:
        pytest.skip(f"importing into Kibana needs a Docker engine, none reachable: {error}")
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

    with Network() as network:
        es = (
            DockerContainer(ES_IMAGE)
            .with_envs(**{"discovery.type": "single-node", "xpack.security.enabled": "false"})
            .with_env("ES_JAVA_OPTS", "-Xms1g -Xmx1g")
            .with_network(network)
            .with_network_aliases("elasticsearch")
        )
        kibana = (
            DockerContainer(KIBANA_IMAGE)
            .with_env("ELASTICSEARCH_HOSTS", "http://elasticsearch:9200")
            .with_network(network)
            .with_exposed_ports(5601)
        )
        with es, kibana:
            url = f"http://{kibana.get_container_host_ip()}:{kibana.get_exposed_port(5601)}"
            _wait_until_available(url, 300)
            yield url


@pytest.mark.slow
@pytest.mark.integration
def test_kibana_imports_every_object_and_resolves_the_dashboard(
    setup_script: ModuleType,
    kibana_url: str,
    objects: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert setup_script.main(["--kibana-url", kibana_url]) == 0  # exits with the errors if the import has any
    assert json.loads(capsys.readouterr().out)["imported"] == 5
    for obj in objects:
        stored = _kibana_get(kibana_url, f"/api/saved_objects/{obj['type']}/{obj['id']}")
        assert "error" not in stored, stored
        assert {(r["type"], r["id"]) for r in stored["references"]} == {
            (r["type"], r["id"]) for r in obj["references"]
        }
    fields = _kibana_get(kibana_url, "/api/data_views/data_view/esbubble-traces")["data_view"]
    assert fields["timeFieldName"] == "@timestamp"
