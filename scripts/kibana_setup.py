#!/usr/bin/env python3
"""Create esbubble's Kibana data views and import its dashboard.

The data views (trace alias, runs alias) are created through Kibana's data
view API so they exist even where saved-object import is restricted; the
Lens charts, the saved searches and the dashboard are then imported from
``kibana/esbubble.ndjson`` (written by ``scripts/make_kibana_objects.py``).
Re-running is safe: both calls overwrite.

    python scripts/kibana_setup.py --kibana-url http://localhost:5601 [--prefix esbubble]

Credentials come from --username/--password or --api-key, or the
KIBANA_USERNAME / KIBANA_PASSWORD / KIBANA_API_KEY environment variables.
Only the standard library is used, so it runs anywhere Python does.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

DEFAULT_NDJSON = Path(__file__).resolve().parent.parent / "kibana" / "esbubble.ndjson"
DEFAULT_PREFIX = "esbubble"


def load_objects(path: Path) -> list[dict[str, Any]]:
    """The saved objects of an NDJSON export, one per non-empty line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def with_prefix(objects: Sequence[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The objects with data view titles pointed at ``<prefix>-traces`` / ``<prefix>-runs``."""
    result = []
    for obj in objects:
        copy = json.loads(json.dumps(obj))
        if copy["type"] == "index-pattern":
            title = copy["attributes"]["title"]
            copy["attributes"]["title"] = prefix + title.removeprefix(DEFAULT_PREFIX)
        result.append(copy)
    return result


def data_view_requests(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bodies for ``POST /api/data_views/data_view``, one per data view, overriding any existing one."""
    return [
        {
            "data_view": {
                "id": obj["id"],
                "title": obj["attributes"]["title"],
                "name": obj["attributes"].get("name", obj["attributes"]["title"]),
                "timeFieldName": obj["attributes"]["timeFieldName"],
            },
            "override": True,
        }
        for obj in objects
        if obj["type"] == "index-pattern"
    ]


def import_payload(objects: Sequence[dict[str, Any]]) -> bytes:
    """The NDJSON to import: everything except the data views, which the API already created."""
    lines = [json.dumps(obj, sort_keys=True) for obj in objects if obj["type"] != "index-pattern"]
    return ("\n".join(lines) + "\n").encode("utf-8")


def multipart(field: str, filename: str, content: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body holding one file, and its content type."""
    boundary = f"esbubble-{uuid.uuid4().hex}"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{filename}"\r\n'
        "Content-Type: application/ndjson\r\n\r\n"
    ).encode()
    return head + content + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


class Kibana:
    """A minimal Kibana API caller: base URL, auth header and the kbn-xsrf header every write needs."""

    def __init__(self, url: str, *, auth: str | None) -> None:
        self.url = url.rstrip("/")
        self.auth = auth

    def post(self, path: str, body: bytes, content_type: str) -> dict[str, Any]:
        request = urllib.request.Request(self.url + path, data=body, method="POST")
        request.add_header("kbn-xsrf", "esbubble")
        request.add_header("Content-Type", content_type)
        if self.auth:
            request.add_header("Authorization", self.auth)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                answer: dict[str, Any] = json.loads(response.read() or b"{}")
                return answer
        except urllib.error.HTTPError as error:
            detail = error.read().decode("utf-8", "replace")[:300]
            raise SystemExit(f"Kibana refused POST {path}: HTTP {error.code} {detail}") from None
        except urllib.error.URLError as error:
            raise SystemExit(
                f"cannot reach Kibana at {self.url}: {error.reason} (start it, e.g. `docker compose up -d`)"
            ) from None


def auth_header(username: str | None, password: str | None, api_key: str | None) -> str | None:
    if api_key:
        return f"ApiKey {api_key}"
    if username:
        token = base64.b64encode(f"{username}:{password or ''}".encode()).decode()
        return f"Basic {token}"
    return None


def setup(kibana: Kibana, objects: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Create the data views, then import the rest; returns what Kibana reported."""
    views = []
    for body in data_view_requests(objects):
        kibana.post("/api/data_views/data_view", json.dumps(body).encode(), "application/json")
        views.append(body["data_view"]["title"])
    form, content_type = multipart("file", "esbubble.ndjson", import_payload(objects))
    result = kibana.post("/api/saved_objects/_import?overwrite=true", form, content_type)
    if not result.get("success", False):
        raise SystemExit(f"Kibana import reported errors: {json.dumps(result.get('errors', []))[:500]}")
    return {"data_views": views, "imported": result.get("successCount", 0)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--kibana-url", default=os.environ.get("KIBANA_URL", "http://localhost:5601"))
    parser.add_argument("--prefix", default=os.environ.get("ESBUBBLE_PREFIX", DEFAULT_PREFIX))
    parser.add_argument("--username", default=os.environ.get("KIBANA_USERNAME"))
    parser.add_argument("--password", default=os.environ.get("KIBANA_PASSWORD"))
    parser.add_argument("--api-key", default=os.environ.get("KIBANA_API_KEY"))
    parser.add_argument("--file", type=Path, default=DEFAULT_NDJSON, help="saved objects NDJSON")
    args = parser.parse_args(argv)
    objects = with_prefix(load_objects(args.file), args.prefix)
    kibana = Kibana(args.kibana_url, auth=auth_header(args.username, args.password, args.api_key))
    summary = setup(kibana, objects)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
