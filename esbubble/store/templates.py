"""Install the component and index templates and create the chunk index behind its alias.

The template bodies live as JSON in ``index_templates/`` (shipped inside the
package); ``{prefix}`` in them is replaced by the configured prefix. Each
installed template carries the SHA-256 of its body in ``_meta.esbubble_hash``,
so a second ``init`` compares hashes and changes nothing when they match —
comparing whole bodies would break on the engine's own normalisation.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from elasticsearch import ApiError, NotFoundError
from pydantic import BaseModel, ConfigDict

from esbubble.errors import EngineError

if TYPE_CHECKING:
    from esbubble.store.connection import Store

COMPONENTS = ("settings", "chunks-mappings", "traces-mappings", "runs-mappings")
INDEX_TEMPLATES = ("chunks", "traces", "runs")
Status = Literal["created", "updated", "unchanged"]


class InitStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["component_template", "index_template", "index"]
    name: str
    status: Status


class InitResult(BaseModel):
    """What ``init_indices`` did, one step per template or index."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[InitStep]

    @property
    def changed(self) -> bool:
        return any(step.status != "unchanged" for step in self.steps)


def load_template(name: str, prefix: str) -> dict[str, Any]:
    """One template body from ``index_templates/<name>.json`` with the prefix filled in."""
    source = resources.files("esbubble").joinpath("index_templates", f"{name}.json").read_text("utf-8")
    body: dict[str, Any] = json.loads(source.replace("{prefix}", prefix))
    meta = dict(body.get("_meta", {}))
    meta["esbubble_hash"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    body["_meta"] = meta
    return body


def _installed_hash(found: list[dict[str, Any]], key: str) -> str | None:
    for entry in found:
        meta = entry.get(key, {}).get("_meta") or {}
        return str(meta.get("esbubble_hash")) if meta.get("esbubble_hash") else ""
    return None


def _component(store: Store, short: str) -> InitStep:
    name = f"{store.names.prefix}-{short}"
    body = load_template(f"component-{short}", store.names.prefix)
    try:
        found = store.client.cluster.get_component_template(name=name).body["component_templates"]
    except NotFoundError:
        found = []
    current = _installed_hash(found, "component_template")
    if current == body["_meta"]["esbubble_hash"]:
        return InitStep(kind="component_template", name=name, status="unchanged")
    store.client.cluster.put_component_template(name=name, template=body["template"], meta=body["_meta"])
    return InitStep(kind="component_template", name=name, status="created" if current is None else "updated")


def _index_template(store: Store, short: str) -> InitStep:
    name = f"{store.names.prefix}-{short}"
    body = load_template(short, store.names.prefix)
    try:
        found = store.client.indices.get_index_template(name=name).body["index_templates"]
    except NotFoundError:
        found = []
    current = _installed_hash(found, "index_template")
    if current == body["_meta"]["esbubble_hash"]:
        return InitStep(kind="index_template", name=name, status="unchanged")
    store.client.indices.put_index_template(
        name=name,
        index_patterns=body["index_patterns"],
        composed_of=body["composed_of"],
        template=body.get("template"),
        priority=body["priority"],
        meta=body["_meta"],
    )
    return InitStep(kind="index_template", name=name, status="created" if current is None else "updated")


def _add_missing_chunk_fields(store: Store, index: str) -> bool:
    """Add the chunk fields a newer esbubble maps (e.g. ``terms``) to an existing chunk index.

    The mapping is strict, so without this an index created by an older
    version would refuse every chunk the current ingest writes. Only missing
    fields are added (an additive mapping change both engines accept); True
    when something was added.
    """
    wanted = load_template("component-chunks-mappings", store.names.prefix)["template"]["mappings"][
        "properties"
    ]
    found = store.client.indices.get_mapping(index=index).body
    present: set[str] = set()
    for entry in found.values():
        present |= set(entry.get("mappings", {}).get("properties", {}))
    missing = {field: spec for field, spec in wanted.items() if field not in present}
    if missing:
        store.client.indices.put_mapping(index=index, properties=missing)
    return bool(missing)


def _chunk_index(store: Store) -> InitStep:
    names = store.names
    if store.client.indices.exists_alias(name=names.chunks):
        status: Status = "updated" if _add_missing_chunk_fields(store, names.chunks) else "unchanged"
        return InitStep(kind="index", name=names.chunks_index, status=status)
    if store.client.indices.exists(index=names.chunks_index):
        _add_missing_chunk_fields(store, names.chunks_index)
        store.client.indices.put_alias(index=names.chunks_index, name=names.chunks)
        return InitStep(kind="index", name=names.chunks_index, status="updated")
    try:
        store.client.indices.create(index=names.chunks_index, aliases={names.chunks: {}})
    except ApiError as error:
        if error.error != "resource_already_exists_exception":
            raise
        # Another command on the same engine created it between our check and our create.
        return InitStep(kind="index", name=names.chunks_index, status="unchanged")
    return InitStep(kind="index", name=names.chunks_index, status="created")


def ensure_chunk_fields(store: Store) -> bool:
    """Before an ingest: give an existing chunk index the fields this version writes (see above)."""
    name = store.names.chunks
    try:
        return bool(store.client.indices.exists(index=name)) and _add_missing_chunk_fields(store, name)
    except ApiError as error:
        raise EngineError(
            f"{store.display_url} refused to add esbubble's new chunk fields to {name}: {error.message}",
            hint="run `esbubble init` with a user allowed to manage the index",
        ) from None


def ensure_chunk_index(store: Store) -> InitStep:
    """The chunk index in use (``--index``), created with esbubble's chunk settings and mappings if missing.

    Without it, a first bulk write would auto-create the index with dynamic
    mappings, on which retrieval's keyword filters and sort do not work.
    """
    name = store.names.chunks
    try:
        if store.client.indices.exists(index=name):
            changed = _add_missing_chunk_fields(store, name)
            return InitStep(kind="index", name=name, status="updated" if changed else "unchanged")
        prefix = store.names.prefix
        store.client.indices.create(
            index=name,
            settings=load_template("component-settings", prefix)["template"]["settings"],
            mappings=load_template("component-chunks-mappings", prefix)["template"]["mappings"],
        )
    except ApiError as error:
        raise EngineError(
            f"{store.display_url} refused to create the chunk index {name}: {error.message}"
        ) from None
    return InitStep(kind="index", name=name, status="created")


def init_indices(store: Store) -> InitResult:
    """Install templates and the chunk index; running it twice changes nothing."""
    try:
        steps = [_component(store, short) for short in COMPONENTS]
        steps += [_index_template(store, short) for short in INDEX_TEMPLATES]
        steps.append(_chunk_index(store))
    except ApiError as error:
        raise EngineError(
            f"{store.display_url} refused to install the esbubble templates: {error.message}",
            hint="check the cluster's permissions and version (8.18+ or 9.x)",
        ) from None
    return InitResult(steps=steps)
