#!/usr/bin/env python3
"""Write ``kibana/esbubble.ndjson``: esbubble's data views, Lens charts, runs search and dashboard.

The objects have the form a Kibana 9.x saved-objects export gives them: sorted keys,
``coreMigrationVersion``, a ``typeMigrationVersion`` per type, ``managed``, Lens
(``lens``) objects with a form-based layer per chart, and a dashboard whose panels
point at them through ``<panelIndex>:panel_<panelIndex>`` references. Export-only
bookkeeping (``created_at``, ``updated_at``, the document ``version``) is left out;
Kibana fills it in on import.

Each ``typeMigrationVersion`` is the one Kibana 9.x writes for that shape, and no
newer than what 9.0 knows, so every 9.x release imports the file and migrates it
forward. Ids of layers, columns and panels are UUIDs derived from fixed names, so
re-running this script reproduces the file byte for byte.

    python scripts/make_kibana_objects.py [--check]
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from generated_file import write_or_check

OUT = Path(__file__).resolve().parent.parent / "kibana" / "esbubble.ndjson"

CORE_MIGRATION_VERSION = "8.8.0"
# Model versions 10.N.0 are the types' "model version N". Later 9.x releases export newer ones for
# features these objects do not use (dashboard sections, Discover tabs, the Lens item version);
# an older version is migrated forward on import, a newer one is refused by older Kibanas.
TYPE_MIGRATION_VERSIONS = {
    "index-pattern": "8.0.0",
    "lens": "8.9.0",
    "search": "10.5.0",
    "dashboard": "10.2.0",
}
TRACES_VIEW = "esbubble-traces"
RUNS_VIEW = "esbubble-runs"
_NAMESPACE = uuid.UUID("3f0c1d52-8a1e-4f5e-9a57-2f2d8e0b7c11")


def stable_id(name: str) -> str:
    """A UUID that depends only on ``name`` (Kibana uses UUIDs for layers, columns and panels)."""
    return str(uuid.uuid5(_NAMESPACE, name))


def layer_id(chart_id: str) -> str:
    return stable_id(f"{chart_id}/layer")


def column_id(chart_id: str, name: str) -> str:
    return stable_id(f"{chart_id}/{name}")


def saved_object(
    kind: str, object_id: str, attributes: dict[str, Any], references: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "attributes": attributes,
        "coreMigrationVersion": CORE_MIGRATION_VERSION,
        "id": object_id,
        "managed": False,
        "references": references,
        "type": kind,
        "typeMigrationVersion": TYPE_MIGRATION_VERSIONS[kind],
    }


def data_view(object_id: str, name: str) -> dict[str, Any]:
    attributes = {
        "allowHidden": False,
        "fieldAttrs": "{}",
        "fieldFormatMap": "{}",
        "fields": "[]",
        "name": name,
        "runtimeFieldMap": "{}",
        "sourceFilters": "[]",
        "timeFieldName": "@timestamp",
        "title": object_id,
    }
    return saved_object("index-pattern", object_id, attributes, [])


# Lens columns of a form-based layer.


def count_column() -> dict[str, Any]:
    return {
        "dataType": "number",
        "isBucketed": False,
        "label": "Count of records",
        "operationType": "count",
        "params": {"emptyAsNull": True},
        "scale": "ratio",
        "sourceField": "___records___",
    }


def sum_column(field: str, label: str) -> dict[str, Any]:
    return {
        "customLabel": True,
        "dataType": "number",
        "isBucketed": False,
        "label": label,
        "operationType": "sum",
        "params": {"emptyAsNull": True},
        "scale": "ratio",
        "sourceField": field,
    }


def date_histogram_column(field: str) -> dict[str, Any]:
    return {
        "dataType": "date",
        "isBucketed": True,
        "label": field,
        "operationType": "date_histogram",
        "params": {"dropPartials": False, "includeEmptyRows": True, "interval": "auto"},
        "scale": "interval",
        "sourceField": field,
    }


def terms_column(field: str, label: str, size: int, order_by_column: str | None = None) -> dict[str, Any]:
    """Top ``size`` values of ``field``, by the value of ``order_by_column`` or else alphabetically."""
    order_by = (
        {"type": "column", "columnId": order_by_column} if order_by_column else {"type": "alphabetical"}
    )
    return {
        "customLabel": True,
        "dataType": "string",
        "isBucketed": True,
        "label": label,
        "operationType": "terms",
        "params": {
            "exclude": [],
            "excludeIsRegex": False,
            "include": [],
            "includeIsRegex": False,
            "missingBucket": False,
            "orderBy": order_by,
            "orderDirection": "desc",
            "otherBucket": True,
            "parentFormat": {"id": "terms"},
            "size": size,
        },
        "scale": "ordinal",
        "sourceField": field,
    }


def lens(
    object_id: str,
    *,
    title: str,
    description: str,
    kql: str,
    columns: dict[str, dict[str, Any]],
    visualization_type: str,
    visualization: dict[str, Any],
) -> dict[str, Any]:
    """A Lens chart over the traces data view with one form-based layer holding ``columns`` in order."""
    layer = layer_id(object_id)
    state = {
        "adHocDataViews": {},
        "datasourceStates": {
            "formBased": {
                "layers": {
                    layer: {
                        "columnOrder": [column_id(object_id, name) for name in columns],
                        "columns": {column_id(object_id, name): column for name, column in columns.items()},
                        "incompleteColumns": {},
                        "sampling": 1,
                    }
                }
            },
            "indexpattern": {"layers": {}},
            "textBased": {"layers": {}},
        },
        "filters": [],
        "internalReferences": [],
        "query": {"language": "kuery", "query": kql},
        "visualization": visualization,
    }
    attributes = {
        "description": description,
        "state": state,
        "title": title,
        "visualizationType": visualization_type,
    }
    reference = {"id": TRACES_VIEW, "name": f"indexpattern-datasource-layer-{layer}", "type": "index-pattern"}
    return saved_object("lens", object_id, attributes, [reference])


def xy_state(object_id: str, series: str, x: str, y: str, split: str) -> dict[str, Any]:
    """An XY chart of one data layer: ``y`` over ``x``, one series per value of ``split``."""
    visible = {"x": True, "yLeft": True, "yRight": True}
    return {
        "axisTitlesVisibilitySettings": visible,
        "fittingFunction": "None",
        "gridlinesVisibilitySettings": visible,
        "labelsOrientation": {"x": 0, "yLeft": 0, "yRight": 0},
        "layers": [
            {
                "accessors": [column_id(object_id, y)],
                "layerId": layer_id(object_id),
                "layerType": "data",
                "position": "top",
                "seriesType": series,
                "showGridlines": False,
                "splitAccessor": column_id(object_id, split),
                "xAccessor": column_id(object_id, x),
            }
        ],
        "legend": {"isVisible": True, "position": "right"},
        "preferredSeriesType": series,
        "tickLabelsVisibilitySettings": visible,
        "valueLabels": "hide",
    }


def rejections_over_time() -> dict[str, Any]:
    object_id = "esbubble-rejections-over-time"
    return lens(
        object_id,
        title="esbubble · rejection reasons over time",
        description="Rejected candidates over time, stacked by the reason the first failing gate gave.",
        kql='final_decision : "rejected"',
        columns={
            "time": date_histogram_column("@timestamp"),
            "reason": terms_column("final_reason", "Reason", 10, column_id(object_id, "count")),
            "count": count_column(),
        },
        visualization_type="lnsXY",
        visualization=xy_state(object_id, "bar_stacked", x="time", y="count", split="reason"),
    )


def tokens_per_section() -> dict[str, Any]:
    object_id = "esbubble-tokens-per-section"
    return lens(
        object_id,
        title="esbubble · tokens per section",
        description="Tokens of selected chunks per section, one bar per variant (Table 2, Figure 5).",
        kql='final_decision : "selected"',
        columns={
            "section": terms_column("section", "Section", 20, column_id(object_id, "tokens")),
            "variant": terms_column("variant", "Variant", 4),
            "tokens": sum_column("token_count", "Tokens"),
        },
        visualization_type="lnsXY",
        visualization=xy_state(object_id, "bar_horizontal", x="section", y="tokens", split="variant"),
    )


def decisions_per_run() -> dict[str, Any]:
    object_id = "esbubble-decisions-per-run"
    columns = {
        "run": terms_column("run_id", "Run", 50),
        "decision": terms_column("final_decision", "Decision", 3),
        "reason": terms_column("final_reason", "Reason", 10, column_id(object_id, "count")),
        "count": count_column(),
        "tokens": sum_column("token_count", "Tokens"),
    }
    table = {
        "columns": [{"columnId": column_id(object_id, name), "isTransposed": False} for name in columns],
        "layerId": layer_id(object_id),
        "layerType": "data",
    }
    return lens(
        object_id,
        title="esbubble · decisions per run",
        description="Candidates per run by final decision and reason, with the tokens they carry.",
        kql="",
        columns=columns,
        visualization_type="lnsDatatable",
        visualization=table,
    )


def saved_search(
    object_id: str, title: str, description: str, *, view: str, columns: Sequence[str], query: str = ""
) -> dict[str, Any]:
    """A Discover search over ``view``, newest first, showing ``columns``, filtered by a KQL ``query``."""
    search_source = {
        "filter": [],
        "indexRefName": "kibanaSavedObjectMeta.searchSourceJSON.index",
        "query": {"language": "kuery", "query": query},
    }
    attributes = {
        "columns": list(columns),
        "description": description,
        "grid": {},
        "hideChart": False,
        "isTextBasedQuery": False,
        "kibanaSavedObjectMeta": {"searchSourceJSON": json.dumps(search_source, sort_keys=True)},
        "sort": [["@timestamp", "desc"]],
        "timeRestore": False,
        "title": title,
        "usesAdHocDataView": False,
    }
    reference = {"id": view, "name": "kibanaSavedObjectMeta.searchSourceJSON.index", "type": "index-pattern"}
    return saved_object("search", object_id, attributes, [reference])


def runs_search() -> dict[str, Any]:
    columns = ["query", "variant", "batch_id", "status", "totals.tokens_used", "totals.selected",
               "totals.candidates", "config_hash"]  # fmt: skip
    return saved_search(
        "esbubble-runs-list",
        "esbubble · runs",
        "One row per run manifest, newest first.",
        view=RUNS_VIEW,
        columns=columns,
    )


def dropped_top_search() -> dict[str, Any]:
    """The candidates the engine ranked first to tenth that a bubble left out: without gold, the
    decisions where a bubble may do worse than the engine's own order."""
    columns = ["run_id", "rank", "es_rank", "chunk_id", "section", "token_count", "gain", "similarity",
               "final_reason"]  # fmt: skip
    return saved_search(
        "esbubble-dropped-engine-top",
        "esbubble · the engine's first ten, dropped",
        "Candidates the engine ranked 1-10 that the bubble left out, and why; explain one with"
        " `esbubble trace RUN_ID --chunk CHUNK_ID`.",
        view=TRACES_VIEW,
        columns=columns,
        query='es_rank <= 10 and final_decision : "rejected" and not variant : "engine_topk"',
    )


def dashboard(panels: Sequence[tuple[dict[str, Any], dict[str, int]]]) -> dict[str, Any]:
    """The overview dashboard: one by-reference panel per (saved object, grid position)."""
    panel_list, references = [], []
    for target, grid in panels:
        index = stable_id(f"esbubble-overview/{target['id']}")
        panel_list.append(
            {
                "embeddableConfig": {"enhancements": {}},
                "gridData": grid | {"i": index},
                "panelIndex": index,
                "panelRefName": f"panel_{index}",
                "type": target["type"],
            }
        )
        references.append({"id": target["id"], "name": f"{index}:panel_{index}", "type": target["type"]})
    options = {
        "hidePanelTitles": False,
        "syncColors": False,
        "syncCursor": True,
        "syncTooltips": False,
        "useMargins": True,
    }
    attributes = {
        "description": "Why candidates were dropped, where the tokens went, and what every run decided.",
        "kibanaSavedObjectMeta": {
            "searchSourceJSON": json.dumps(
                {"filter": [], "query": {"language": "kuery", "query": ""}}, sort_keys=True
            )
        },
        "optionsJSON": json.dumps(options, sort_keys=True),
        "panelsJSON": json.dumps(panel_list, sort_keys=True),
        "refreshInterval": {"pause": True, "value": 60000},
        "timeFrom": "now-30d",
        "timeRestore": True,
        "timeTo": "now",
        "title": "esbubble · context bubble decisions",
    }
    return saved_object("dashboard", "esbubble-overview", attributes, references)


def build() -> list[dict[str, Any]]:
    rejections, tokens, decisions = rejections_over_time(), tokens_per_section(), decisions_per_run()
    runs, dropped = runs_search(), dropped_top_search()
    board = dashboard(
        [
            (rejections, {"x": 0, "y": 0, "w": 48, "h": 15}),
            (tokens, {"x": 0, "y": 15, "w": 24, "h": 15}),
            (decisions, {"x": 24, "y": 15, "w": 24, "h": 15}),
            (runs, {"x": 0, "y": 30, "w": 48, "h": 15}),
            (dropped, {"x": 0, "y": 45, "w": 48, "h": 15}),
        ]
    )
    views = [data_view(TRACES_VIEW, "esbubble traces"), data_view(RUNS_VIEW, "esbubble runs")]
    return [*views, rejections, tokens, decisions, runs, dropped, board]


def render(objects: Sequence[dict[str, Any]]) -> str:
    return "".join(
        json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n" for obj in objects
    )


def main(argv: Sequence[str] | None = None) -> int:
    return write_or_check(
        OUT,
        lambda: render(build()),
        summary=lambda text: f"{len(text.splitlines())} objects",
        argv=argv,
        doc=__doc__ or "",
    )


if __name__ == "__main__":
    sys.exit(main())
