"""The same stored candidates give the same bubbles, traces, repairs and expansions as when the
digests were recorded (``scripts/golden_bubbles.py``; regenerate with ``--write`` when a change is
intentional)."""

from __future__ import annotations

import json

from repo_scripts import load_script

golden = load_script("golden_bubbles")


def test_bubbles_and_traces_match_the_recorded_digests() -> None:
    expected = json.loads(golden.DIGESTS.read_text(encoding="utf-8"))
    actual = golden.compute(golden.load_cases())
    changed = golden.differences(expected, actual)
    assert not changed, golden.failure_message(changed)


def test_a_changed_digest_is_reported_with_the_command_that_regenerates() -> None:
    expected = {"sample/1/bm25/full": "a", "sample/1/tf/full": "b"}
    actual = {"sample/1/bm25/full": "a", "sample/1/tf/full": "c", "sample/1/tf/new": "d"}
    changed = golden.differences(expected, actual)
    assert changed == ["sample/1/tf/full", "sample/1/tf/new"]
    assert "python scripts/golden_bubbles.py --write" in golden.failure_message(changed)


def test_the_digest_leaves_out_what_names_the_run() -> None:
    one = {"run_id": "a", "trace": [{"trace_id": "x", "@timestamp": "t1", "rank": 1}]}
    other = {"run_id": "b", "trace": [{"trace_id": "y", "@timestamp": "t2", "rank": 1}]}
    assert golden.digest(one) == golden.digest(other)
    assert golden.digest(one) != golden.digest({"run_id": "a", "trace": [{"rank": 2}]})
