"""Install the component and index templates and create the chunk index behind its alias.

The template bodies live as JSON in ``index_templates/`` (shipped inside the
package); ``{prefix}`` in them is replaced by the configured prefix. Each
installed template carries the SHA-256 of its body in ``_meta.esbubble_hash``,
so a second ``init`` compares hashes and changes nothing when they match —
comparing whole bodies would break on the engine's own normalisation.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from esbubble.errors import ConfigError, EngineError
from esbubble.store.errors import Failure, always, engine_errors, tolerating
from esbubble.store.names import IndexNames

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
    refused: str | None = None  # an upgrade the cluster refused (the user may not manage templates)

    @property
    def changed(self) -> bool:
        return any(step.status != "unchanged" for step in self.steps)

    @property
    def first_use(self) -> bool:
        """The chunk index was created: the prefix had not been initialised (else: an upgrade)."""
        return any(step.kind == "index" and step.status == "created" for step in self.steps)


def load_template(name: str, prefix: str) -> dict[str, Any]:
    """One template body from ``index_templates/<name>.json`` with the prefix filled in."""
    source = resources.files("esbubble").joinpath("index_templates", f"{name}.json").read_text("utf-8")
    body: dict[str, Any] = json.loads(source.replace("{prefix}", prefix))
    meta = dict(body.get("_meta", {}))
    meta["esbubble_hash"] = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    body["_meta"] = meta
    return body


def _not_found(failure: Failure) -> bool:
    return failure.status == 404


def _already_exists(failure: Failure) -> bool:
    # Another command on the same engine created the index between our check and our create.
    return failure.reason == "resource_already_exists_exception"


def _installed_hash(found: list[dict[str, Any]], key: str) -> str | None:
    for entry in found:
        meta = entry.get(key, {}).get("_meta") or {}
        return str(meta.get("esbubble_hash")) if meta.get("esbubble_hash") else ""
    return None


def _component(store: Store, short: str) -> InitStep:
    name = f"{store.names.prefix}-{short}"
    body = load_template(f"component-{short}", store.names.prefix)
    found: list[dict[str, Any]] = []
    with tolerating(_not_found):
        found = store.client.cluster.get_component_template(name=name).body["component_templates"]
    current = _installed_hash(found, "component_template")
    if current == body["_meta"]["esbubble_hash"]:
        return InitStep(kind="component_template", name=name, status="unchanged")
    store.client.cluster.put_component_template(name=name, template=body["template"], meta=body["_meta"])
    return InitStep(kind="component_template", name=name, status="created" if current is None else "updated")


def _index_template(store: Store, short: str) -> InitStep:
    name = f"{store.names.prefix}-{short}"
    body = load_template(short, store.names.prefix)
    found: list[dict[str, Any]] = []
    with tolerating(_not_found):
        found = store.client.indices.get_index_template(name=name).body["index_templates"]
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


# Fields only audit records have: an index mapping them is an audit index, whatever its prefix.
_AUDIT_FIELDS = frozenset({"run_id", "trace_id"})


def _add_missing_chunk_fields(store: Store, index: str) -> bool:
    """Add the chunk fields a newer esbubble maps (e.g. ``terms``) to an existing chunk index."""
    return _add_missing_fields(store, index, "component-chunks-mappings")


def _add_missing_fields(store: Store, index: str, component: str) -> bool:
    """Add the fields a newer esbubble maps to existing indices (or an alias's indices) of one kind.

    The mappings are strict, so without this an index created by an older
    version would refuse every document the current version writes. Only
    missing fields are added (an additive mapping change both engines accept);
    True when something was added. A chunk index that holds audit records (any
    prefix's) is refused.
    """
    wanted = load_template(component, store.names.prefix)["template"]["mappings"]["properties"]
    found = store.client.indices.get_mapping(index=index).body
    present: set[str] = set()
    for entry in found.values():
        present |= set(entry.get("mappings", {}).get("properties", {}))
    if component == "component-chunks-mappings" and _AUDIT_FIELDS & present:
        raise ConfigError(
            f"{index} holds esbubble audit records (traces or runs), not chunks; nothing was written",
            hint="name a chunk index with --index, or drop it to use <prefix>-chunks",
        )
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
    with tolerating(_already_exists) as create:
        store.client.indices.create(index=names.chunks_index, aliases={names.chunks: {}})
    status = "unchanged" if create.failure is not None else "created"
    return InitStep(kind="index", name=names.chunks_index, status=status)


def ensure_chunk_fields(store: Store) -> bool:
    """Before an ingest: give an existing chunk index the fields this version writes (see above)."""
    name = store.names.chunks
    refused = _refusal(
        lambda failure: EngineError(
            f"{store.display_url} refused to add esbubble's new chunk fields to {name}: {failure.reason}",
            hint="run `esbubble init` with a user allowed to manage the index",
        )
    )
    with engine_errors(refused):
        return bool(store.client.indices.exists(index=name)) and _add_missing_chunk_fields(store, name)


def ensure_chunk_index(store: Store) -> InitStep:
    """The chunk index in use (``--index``), created with esbubble's chunk settings and mappings if missing.

    Without it, a first bulk write would auto-create the index with dynamic
    mappings, on which retrieval's keyword filters and sort do not work.
    """
    name = store.names.chunks
    refused = _refusal(
        lambda failure: EngineError(
            f"{store.display_url} refused to create the chunk index {name}: {failure.reason}"
        )
    )
    with engine_errors(refused):
        if store.client.indices.exists(index=name):
            changed = _add_missing_chunk_fields(store, name)
            return InitStep(kind="index", name=name, status="updated" if changed else "unchanged")
        prefix = store.names.prefix
        store.client.indices.create(
            index=name,
            settings=load_template("component-settings", prefix)["template"]["settings"],
            mappings=load_template("component-chunks-mappings", prefix)["template"]["mappings"],
        )
    return InitStep(kind="index", name=name, status="created")


def _audit_components(store: Store) -> list[tuple[str, str]]:
    return [
        (store.names.traces, "component-traces-mappings"),
        (store.names.runs, "component-runs-mappings"),
    ]


def _audit_fields(store: Store, alias: str, component: str) -> InitStep:
    """Existing monthly audit indices gain the fields this version writes (new months get them anyway)."""
    changed = _add_missing_fields(store, alias, component)
    return InitStep(kind="index", name=alias, status="updated" if changed else "unchanged")


def patterns_overlap(first: str, second: str) -> bool:
    """Whether some index name matches both ``*`` patterns (Elasticsearch refuses two index templates
    of equal priority whose patterns overlap)."""

    @functools.cache
    def meet(i: int, j: int) -> bool:
        if i == len(first) and j == len(second):
            return True
        if i < len(first) and first[i] == "*":
            return meet(i + 1, j) or (j < len(second) and meet(i, j + 1))
        if j < len(second) and second[j] == "*":
            return meet(i, j + 1) or (i < len(first) and meet(i + 1, j))
        return i < len(first) and j < len(second) and first[i] == second[j] and meet(i + 1, j + 1)

    return meet(0, 0)


def template_conflicts(store: Store) -> list[str]:
    """Installed index templates (other than this prefix's own) that Elasticsearch would refuse ours
    next to: overlapping patterns at the same priority. E.g. prefix ``esbubble-traces`` makes
    ``esbubble-traces-chunks-*``, which overlaps prefix ``esbubble``'s ``esbubble-traces-*``."""
    prefix = store.names.prefix
    ours = {f"{prefix}-{short}": load_template(short, prefix) for short in INDEX_TEMPLATES}
    installed = store.client.indices.get_index_template().body.get("index_templates", [])
    conflicts: list[str] = []
    for entry in installed:
        if entry["name"] in ours:
            continue
        template = entry["index_template"]
        for name, body in ours.items():
            if template.get("priority", 0) != body["priority"]:
                continue
            for mine in body["index_patterns"]:
                clash = [p for p in template.get("index_patterns", []) if patterns_overlap(mine, p)]
                if clash:
                    conflicts.append(f"{name} ({mine}) overlaps {entry['name']} ({clash[0]})")
    return conflicts


def _rollback(store: Store, steps: list[InitStep]) -> None:
    """Remove the templates this ``init`` created before it failed (best effort, newest first)."""
    for step in reversed(steps):
        if step.status != "created":
            continue
        with tolerating(always):
            if step.kind == "index_template":
                store.client.indices.delete_index_template(name=step.name)
            elif step.kind == "component_template":
                store.client.cluster.delete_component_template(name=step.name)


def init_indices(store: Store) -> InitResult:
    """Install templates and the chunk index; running it twice changes nothing.

    Conflicts with templates already on the cluster are found before anything
    is written; should the cluster still refuse a step, the templates this call
    created are removed again, so ``init`` never leaves a partial install.
    """
    with engine_errors(_refused(store)):
        conflicts = template_conflicts(store)
    if conflicts:
        raise ConfigError(
            f"prefix {store.names.prefix!r} cannot be installed on {store.display_url}: "
            f"its index templates would overlap others at the same priority: {'; '.join(conflicts)}",
            hint="choose a prefix whose index names do not start with another esbubble prefix "
            "followed by -chunks, -traces or -runs",
        )
    steps: list[InitStep] = []
    try:
        with engine_errors(_refused(store)):
            for short in COMPONENTS:
                steps.append(_component(store, short))
            for short in INDEX_TEMPLATES:
                steps.append(_index_template(store, short))
            steps.append(_chunk_index(store))
            steps += [
                _audit_fields(store, alias, component)
                for alias, component in _audit_components(store)
                if store.client.indices.exists_alias(name=alias)
            ]
    except EngineError:
        _rollback(store, steps)
        raise
    return InitResult(steps=steps)


def ensure_initialised(store: Store) -> InitResult | None:
    """``esbubble init`` on first use or after an upgrade, for the commands that need its indices
    (ingest, bubble, …).

    First use means the prefix's chunk alias does not exist yet; an upgrade, that the installed
    templates are not this version's (``outdated``): the strict mappings of older audit indices
    would refuse every trace record holding a field this version added, and spool it. Then exactly
    ``init_indices`` runs (for the prefix's own names, also under ``--index``; it adds the missing
    fields to existing indices) and its result is returned. Otherwise this is one ``HEAD`` and two
    ``GET`` requests and returns None. A user not allowed to look at aliases or templates is assumed
    to work on indices an administrator initialised; one the cluster does not let upgrade them gets
    a result whose ``refused`` says why, and the command goes on (records the older mapping refuses
    are spooled, as ever).
    """
    own = replace(store, names=IndexNames.for_prefix(store.names.prefix))
    failed = engine_errors(
        lambda failure: EngineError(
            f"{store.display_url} failed to look up {own.names.chunks}: {failure.reason}"
        )
    )
    exists = False
    with failed, tolerating(_forbidden) as lookup:
        exists = bool(own.client.indices.exists_alias(name=own.names.chunks))
        if exists and not outdated(own):
            return None
    if lookup.failure is not None:
        return None
    try:
        return init_indices(own)
    except EngineError as refused:
        if not exists:  # first use: there are no indices to go on with
            raise
        # an upgrade refused to a user who may use the indices but not manage them: go on
        return InitResult(steps=[], refused=refused.one_line())


def outdated(store: Store) -> bool:
    """Whether an installed component or index template of the prefix is missing or not this
    version's (compared by ``_meta.esbubble_hash``): two requests, one per kind."""
    prefix, client = store.names.prefix, store.client
    kinds: tuple[tuple[Callable[..., Any], str, str, tuple[str, ...], str], ...] = (
        (client.cluster.get_component_template, "component_templates", "component_template", COMPONENTS,
         "component-"),
        (client.indices.get_index_template, "index_templates", "index_template", INDEX_TEMPLATES, ""),
    )  # fmt: skip
    for get, listing, key, shorts, file_prefix in kinds:
        found: dict[str, dict[str, Any]] = {}
        with tolerating(_not_found):
            found = {entry["name"]: entry for entry in get(name=f"{prefix}-*").body[listing]}
        for short in shorts:
            entry = found.get(f"{prefix}-{short}")
            wanted = load_template(f"{file_prefix}{short}", prefix)["_meta"]["esbubble_hash"]
            if entry is None or _installed_hash([entry], key) != wanted:
                return True
    return False


def _forbidden(failure: Failure) -> bool:
    return failure.status == 403


def _refusal(to_error: Callable[[Failure], EngineError]) -> Callable[[Failure], EngineError | None]:
    """``to_error`` for refusals; a request not answered is left to ``open_store``."""
    return lambda failure: to_error(failure) if failure.answered else None


def _refused(store: Store) -> Callable[[Failure], EngineError | None]:
    def to_error(failure: Failure) -> EngineError:
        status = failure.status
        return EngineError(
            f"{store.display_url} refused to install the esbubble templates: "
            f"status {status}, {failure.reason}",
            hint="use a user allowed to manage index templates and indices"
            if status in (401, 403)
            else "check the cluster's version (8.18+ or 9.x)",
        )

    return _refusal(to_error)
