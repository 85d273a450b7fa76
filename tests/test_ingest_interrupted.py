"""An interrupted ingest leaves every document whole: its old version or its new one, never a mix.

The engine is a real osmem process that outlives the command (as with
``esbubble engine start`` or a cluster); the command is a real ``esbubble
ingest`` subprocess. A forwarding proxy holds the second document's write
request so the command can be killed exactly while that write is under way;
the request then either never reaches the engine (the kill came before it
was fully sent) or reaches it whole (the kill came after).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from reliability_proxy import forwarding_proxy

from esbubble.ingest import IngestOptions, ingest_paths
from esbubble.store.connection import Store

pytestmark = pytest.mark.integration

DOCS = 3
# version marker -> rows. More rows than one request of the old 500-item batches, and bravo
# drops 80 rows (deletions), so a document written in several requests would show up mixed.
ROWS = {"alpha": 600, "bravo": 520}


def write_version(folder: Path, marker: str) -> None:
    folder.mkdir(exist_ok=True)
    for doc in range(DOCS):
        lines = ["Item,Description,Qty"]
        lines += [
            f"I{row},{marker} scaffold section {row} with guard rails,{row % 17 + 1}"
            for row in range(ROWS[marker])
        ]
        (folder / f"doc{doc}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def state(store: Store, doc_id: str) -> tuple[int, int, int]:
    """(chunks, chunks of version alpha, chunks of version bravo) stored for ``doc_id``."""
    client, index = store.client, store.names.chunks
    client.indices.refresh(index=index)

    def count(*must: dict[str, object]) -> int:
        query = {"bool": {"filter": [{"term": {"doc_id": doc_id}}], "must": list(must)}}
        return int(client.count(index=index, query=query).body["count"])

    return count(), count({"match": {"text": "alpha"}}), count({"match": {"text": "bravo"}})


ABSENT = (0, 0, 0)
WHOLE = {"alpha": (ROWS["alpha"], ROWS["alpha"], 0), "bravo": (ROWS["bravo"], 0, ROWS["bravo"])}


def _kill_during_second_write(store: Store, folder: Path, signum: int, *, arrives: bool) -> None:
    """Run ``esbubble ingest`` through a proxy; kill it while document 2's write is held there."""
    assert store.settings.url is not None
    with forwarding_proxy(store.settings.url) as (url, proxy):
        proxy.hold_bulk = 1  # the first document's single request passes, the second's is held
        proxy.forward_held = arrives
        command = [
            str(Path(sys.executable).parent / "esbubble"),
            "--url",
            url,
            "--prefix",
            store.names.prefix,
        ]
        process = subprocess.Popen(
            [*command, "ingest", str(folder)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            assert proxy.held.wait(300), "the second document was never written"
            process.send_signal(signum)
            process.wait(timeout=60)
        finally:
            proxy.release.set()
            if process.poll() is None:
                process.kill()
                process.wait()
        assert proxy.settled.wait(300)
    assert process.returncode != 0


@pytest.mark.parametrize(
    ("signum", "arrives"),
    [(signal.SIGKILL, False), (signal.SIGKILL, True), (signal.SIGTERM, False)],
    ids=["SIGKILL-write-never-arrives", "SIGKILL-write-arrives", "SIGTERM-write-never-arrives"],
)
def test_killed_re_ingest_keeps_each_document_old_or_new(
    store: Store, tmp_path: Path, signum: int, arrives: bool
) -> None:
    folder = tmp_path / "job"
    write_version(folder, "alpha")
    assert ingest_paths(store, [folder], IngestOptions()).ok
    assert [state(store, f"doc{d}.csv") for d in range(DOCS)] == [WHOLE["alpha"]] * DOCS

    write_version(folder, "bravo")
    _kill_during_second_write(store, folder, signum, arrives=arrives)
    second = WHOLE["bravo"] if arrives else WHOLE["alpha"]
    assert [state(store, f"doc{d}.csv") for d in range(DOCS)] == [WHOLE["bravo"], second, WHOLE["alpha"]]

    assert ingest_paths(store, [folder], IngestOptions()).ok  # the next run finishes the job
    assert [state(store, f"doc{d}.csv") for d in range(DOCS)] == [WHOLE["bravo"]] * DOCS


@pytest.mark.parametrize("arrives", [False, True], ids=["write-never-arrives", "write-arrives"])
def test_killed_first_ingest_leaves_documents_whole_or_absent(
    store: Store, tmp_path: Path, arrives: bool
) -> None:
    folder = tmp_path / "job"
    write_version(folder, "alpha")
    _kill_during_second_write(store, folder, signal.SIGKILL, arrives=arrives)
    second = WHOLE["alpha"] if arrives else ABSENT
    assert [state(store, f"doc{d}.csv") for d in range(DOCS)] == [WHOLE["alpha"], second, ABSENT]


def test_the_engine_applies_nothing_of_a_bulk_request_cut_off_mid_body(store: Store) -> None:
    """What the design relies on: a request whose body never fully arrived is not applied, even in part."""
    assert store.settings.url is not None
    parts = urlsplit(store.settings.url)
    index = store.names.chunks_index
    lines = []
    for n in range(2000):
        lines += [
            json.dumps({"index": {"_index": index, "_id": f"cut-{n}"}}),
            json.dumps({"doc_id": "cut.md", "chunk_id": f"cut-{n}"}),
        ]
    body = ("\n".join(lines) + "\n").encode()
    head = (
        f"POST /_bulk HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\n"
        f"Content-Type: application/x-ndjson\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=30) as sock:
        sock.sendall(head + body[: len(body) * 3 // 4])  # three quarters of the items, then the client dies
    store.client.indices.refresh(index=index)
    assert store.client.count(index=index, query={"term": {"doc_id": "cut.md"}}).body["count"] == 0


def test_a_document_too_large_for_one_request_is_refused_not_split(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from esbubble.store import chunks

    folder = tmp_path / "job"
    write_version(folder, "alpha")
    monkeypatch.setattr(chunks, "MAX_ATOMIC_BYTES", 100_000)  # each document here needs about 500 KB
    summary = ingest_paths(store, [folder], IngestOptions())
    assert [Path(f.file).name for f in summary.failures] == [f"doc{d}.csv" for d in range(DOCS)]
    assert all("cannot be replaced all at once" in f.reason for f in summary.failures)
    assert [state(store, f"doc{d}.csv") for d in range(DOCS)] == [ABSENT] * DOCS
