"""Erasure on a real index: remember, consolidate, forget --erase, export, then look everywhere.

Usage: python benchmarks/erase_scan.py --root REPO --index-dir BUILT.index --work DIR
       [--out FILE]

The built index is copied to `<work>/erase.index` (the original is not changed). Through
the `memserver` CLI, each step a fresh process with the configured (real) model:

1. remember a note holding a unique marker phrase (with a fenced code block that holds it
   too), and a near-duplicate twin without the marker;
2. `memserver consolidate`, so an abstraction is built from the two (its text holds the
   marker; a run where none does, or where the scan before the erase finds nothing, is
   reported `vacuous` and exits 1, as does any hit after the erase);
3. `memserver forget --id NOTE`, then `memserver forget --id NOTE --erase`;
4. `memserver export`.

Then the independent scanner of the erasure tests (`tests/store/scanner.py`: every version
of every LanceDB table still on disk, every string column; tantivy's terms in every keyword
index; raw bytes of every file under the index folder; every member of the export) looks
for the marker, and `memserver recall --json` with the note's words and the MCP-resource
reads of the erased ids (through the backend the server uses) must not show it. The same
scan runs right after step 2, so a scanner that finds nothing anywhere shows.

Prints one JSON object on stdout (and writes it to --out).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

MEMSERVER = str(Path(sys.executable).with_name("memserver"))
# the twin is the note's sentence without the marker: close enough for the real model's
# cosine (about 0.9) to clear consolidate's affinity, so an abstraction holds the marker
SENTENCE = ("The deploy script for the staging cluster in the eu-west region reads the admin "
            "passphrase {marker}from the bastion host of the ops team.")  # fmt: skip


def cli(root: Path, index_dir: Path, *args: str) -> Any:
    cmd = [MEMSERVER, *args[:1], "--root", str(root), "--index-dir", str(index_dir), *args[1:]]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMSERVER_")}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:1])} failed ({done.returncode}): {done.stderr}")
    return json.loads(done.stdout) if "--json" in args else done.stdout


def scan(index_dir: Path, marker: str, export: Path | None = None) -> dict[str, list[str]]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.store import scanner

    found = {
        "table_versions": scanner.in_table_versions(index_dir, marker),
        "keyword_terms": scanner.in_keyword_index(index_dir, [marker]),
        "index_files": scanner.in_files(index_dir, marker),
    }
    if export is not None:
        found["export_members"] = scanner.in_artifact(export, marker)
    return found


def served(root: Path, index_dir: Path, ids: list[str], marker: str) -> list[str]:
    """The erased ids that `memserver://chunk/{id}` or `memserver://memory/{id}` still
    serve with the marker, read through the server's own backend."""
    from memserver.server.backend import Backend

    backend = Backend(root, index_dir)
    hits = []
    for item in ids:
        for kind, read in (("chunk", backend.chunk), ("memory", backend.memory)):
            value = read(item)
            if value is not None and marker.lower() in json.dumps(value).lower():
                hits.append(f"{kind}/{item}")
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--index-dir", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    marker = f"ERASEMARKER{secrets.token_hex(6).upper()}"
    index_dir = args.work / "erase.index"
    if index_dir.exists():
        shutil.rmtree(index_dir)
    shutil.copytree(args.index_dir, index_dir)
    root = args.root
    note = (SENTENCE.format(marker=f"{marker} ") + "\n\n"
            f"```sh\nexport ADMIN_HINT={marker}x\nrun-deploy --staging\n```")  # fmt: skip
    made = cli(root, index_dir, "remember", note, "--tags", "ops", "--json")
    twin = cli(root, index_dir, "remember", SENTENCE.format(marker=""), "--json")
    merged = cli(root, index_dir, "consolidate", "--json")
    with_marker = [a for a in merged.get("abstractions", []) if marker in a["text"]]
    before = scan(index_dir, marker)
    query = "admin passphrase staging cluster bastion host"
    recalled_before = cli(root, index_dir, "recall", query, "--json")
    cli(root, index_dir, "forget", "--id", made["note_id"], "--json")
    erased = cli(root, index_dir, "forget", "--id", made["note_id"], "--erase", "--json")
    export = args.work / "erase-export.tar.zst"
    cli(root, index_dir, "export", "--out", str(export), "--json")
    after = scan(index_dir, marker, export)
    recalled = cli(root, index_dir, "recall", query, "--json")
    ids = [made["note_id"], *made["memory_ids"], *(a["id"] for a in with_marker)]
    report: dict[str, Any] = {
        "marker_length": len(marker),
        "remembered": {
            "note": made["note_id"],
            "memories": len(made["memory_ids"]),
            "twin_memories": len(twin["memory_ids"]),
        },
        "consolidate": {
            "abstractions": len(merged.get("abstractions", [])),
            "abstractions_with_marker": len(with_marker),
        },
        "before_erase": {k: len(v) for k, v in before.items()},
        "recall_before_erase_shows_marker": marker in json.dumps(recalled_before),
        "forget_erase": {k: erased[k] for k in erased if k != "paths"},
        "after_erase": {k: len(v) for k, v in after.items()},
        "after_erase_hits": after,
        "recall_after_erase_shows_marker": marker in json.dumps(recalled),
        "resources_after_erase_with_marker": served(root, index_dir, ids, marker),
    }
    report["hits_total"] = (
        sum(len(v) for v in after.values())
        + len(report["resources_after_erase_with_marker"])
        + int(report["recall_after_erase_shows_marker"])
    )
    # the run shows something only if the marker was there to find, in an abstraction too
    report["vacuous"] = not (with_marker and all(before.values()))
    text = json.dumps(report, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    sys.exit(1 if report["hits_total"] or report["vacuous"] else 0)


if __name__ == "__main__":
    main()
