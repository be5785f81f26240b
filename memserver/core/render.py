"""What an agent reads of a recall: one compact text and one compact JSON form.

The budget bounds the whole result, not only the evidence text: the MCP tool's text
content, its structured content, and the CLI's text and `--json` output are each within
`budget_tokens` as the real tokenizer counts them. So the forms are lean: a found /
confidence line, then per item one `path:start-end symbol` header and the code. Scores,
routes and memory ids appear only with `explain`. Standard library and core types only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from memserver.core.types import Evidence, MapFile, RecallResult

__all__ = ["dumps", "evidence_dict", "header", "map_file_dict", "map_file_text", "recall_dict",
           "recall_text"]  # fmt: skip

FOUND = {True: "yes", False: "no", None: "unknown"}
ALSO_HEADING = "## also likely (not shown: open these if the above misses)"
TRUNCATED_HINT = "more matches were left out to fit the budget: raise budget_tokens or narrow"


def dumps(value: Any) -> str:
    """Compact JSON (what `--json` prints and what an MCP client may serialize)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# every C0 and C1 control (0x9b is a one-byte CSI), DEL; the second leaves tab and newline
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROLS_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _shown(m: re.Match[str]) -> str:
    return f"\\x{ord(m.group()):02x}"


def one_line(text: str) -> str:
    """`text` (a path, a symbol) with every control character shown as `\\xNN`: a file
    named `a\\n## setup.py:1-9 function main` must not add a made-up result line to an
    answer an agent reads."""
    return _CONTROLS.sub(_shown, text)


def visible(text: str) -> str:
    """`text` with every control character a terminal would act on shown as `\\xNN`
    (tab and newline kept; a CRLF line end read as a newline)."""
    return _CONTROLS_BUT_LINES.sub(_shown, text.replace("\r\n", "\n"))


def header(e: Evidence) -> str:
    """`path:start-end symbol` and what the agent must know before trusting the text."""
    label = one_line(f"{e.path}:{e.start_line}-{e.end_line} {e.symbol or e.kind}").rstrip()
    if e.stale:
        label += " [changed since indexed: re-read the file]"
    if not e.embedded:
        label += " [keyword match only: not embedded yet]"
    return label


def evidence_dict(e: Evidence, explain: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": e.id, "path": e.path, "start_line": e.start_line, "end_line": e.end_line,
        "symbol": e.symbol, "kind": e.kind, "text": e.text,
    }  # fmt: skip
    if e.stale:
        out["stale"] = True
    if not e.embedded:
        out["embedded"] = False
    if explain:
        out.update(language=e.language, score=round(e.score, 6), tokens=e.tokens,
                   routes=list(e.routes), memory_ids=list(e.memory_ids))  # fmt: skip
    return out


def map_file_dict(f: MapFile, explain: bool = False) -> dict[str, Any]:
    """A map answer's file: its path and places (`[start, end, first line of code]`)."""
    out: dict[str, Any] = {
        "path": f.path,
        "places": [[m.start_line, m.end_line, m.signature or m.name] for m in f.symbols],
    }
    if f.role != "code":
        out["role"] = f.role
    if explain:
        out["score"] = round(f.score, 6)
    return out


def map_file_text(f: MapFile, explain: bool = False) -> str:
    """`path` (and its role when not code), then one line per place: `  L73-149 signature`."""
    head = one_line(f.path) + (f" ({f.role})" if f.role != "code" else "")
    if explain:
        head += f" [score {f.score:.4f}]"
    lines = [head]
    for m in f.symbols:
        lines.append(f"  L{m.start_line}-{m.end_line} {one_line(m.signature or m.name)}".rstrip())
    return "\n".join(lines)


def _envelope(result: RecallResult, explain: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "found": result.found, "confidence": result.confidence, "tokens": result.tokens,
        "truncated": result.truncated,
    }  # fmt: skip
    if result.unembedded:
        out["unembedded_chunks"] = result.unembedded
    if result.degraded:
        out["degraded"] = result.degraded
    if explain:
        out["query"] = result.query
    return out


def recall_dict(result: RecallResult, explain: bool = False,
                evidence: Sequence[Evidence] | None = None) -> dict[str, Any]:  # fmt: skip
    """The JSON form (`evidence`: the items to show, default all of the result's)."""
    if result.format == "map":
        return {**_envelope(result, explain),
                "files": [map_file_dict(f, explain) for f in result.files]}  # fmt: skip
    items = result.evidence if evidence is None else evidence
    out = {**_envelope(result, explain), "evidence": [evidence_dict(e, explain) for e in items]}
    if result.also:
        out["also"] = [map_file_dict(f, explain) for f in result.also]
    return out


def _status_line(result: RecallResult) -> str:
    conf = "" if result.confidence is None else f" (confidence {result.confidence:.2f})"
    if result.format == "map":
        line = (
            f"found: {FOUND[result.found]}{conf}; {len(result.files)} files, best first; "
            "open a file at those lines, or recall with paths=[file]"
        )
    else:
        line = f"found: {FOUND[result.found]}{conf}; {len(result.evidence)} results"
        if result.also:
            line += f", then {len(result.also)} more likely files by name"
    if result.found is False and result.evidence:
        line += "; the nearest matches only: rephrase, or read the files"
    if result.truncated:
        line += f"; {TRUNCATED_HINT}"
    if result.unembedded:
        line += f"; {result.unembedded} chunks not embedded yet (keyword search only)"
    if result.degraded:
        line += f"; {result.degraded}"
    return line


def recall_text(result: RecallResult, explain: bool = False,
                evidence: Sequence[Evidence] | None = None) -> str:  # fmt: skip
    """The text form: a status line, then per item its header and the code (then the
    `also` files, a line or two each)."""
    parts = [_status_line(result)]
    if result.format == "map":
        return "\n".join([*parts, *(map_file_text(f, explain) for f in result.files)])
    items = result.evidence if evidence is None else evidence
    for e in items:
        block = f"## {header(e)}"
        if explain:
            block += f"\n(score {e.score:.4f}; via {' + '.join(e.routes)}"
            block += f"; memories {', '.join(e.memory_ids)})" if e.memory_ids else ")"
        parts.append(f"{block}\n{e.text}")
    if result.also:
        parts.append("\n".join([ALSO_HEADING, *(map_file_text(f, explain) for f in result.also)]))
    return "\n\n".join(parts)
