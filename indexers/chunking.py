"""FileChunker: one entry point that cuts any file into chunks (the `Chunker` protocol).

Code in the registered tree-sitter languages is cut at definitions, markdown at headings, and
everything else (json, yaml, toml, text, unknown) into line windows. This is an edge: whatever
goes wrong inside a chunker, the file still comes back as line windows with `fallback_reason`
saying why, and `chunk` never raises.

Contract, for every result: each chunk's text is exactly the file's lines start_line..end_line
joined by "\\n"; chunks are sorted, never overlap, never start or end on a blank line, and
every non-blank line is in exactly one chunk; `tokens` is the counter's count of the text.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

from indexers.languages import choose_parse
from indexers.markdown import markdown_pieces
from indexers.tagfile import skip_parse_reason, tag_file
from indexers.text import Lines, Piece, merge_tiny, text_pieces, tiling_problem, to_drafts
from indexers.treesitter import LANGUAGES as CODE_LANGUAGES
from indexers.treesitter.chunker import code_pieces
from indexers.treesitter.definitions import error_share
from indexers.treesitter.tags import extract_tags
from memserver.core.graph import FileTags
from memserver.core.protocols import TokenCounter
from memserver.core.types import ChunkDraft, ChunkOptions, ChunkResult

MARKDOWN_LANGUAGES = frozenset({"markdown"})
# Bump when a change to the chunkers changes their output: indexes re-chunk every file.
# 4: a `.h` header is parsed as C++ first when its lines show C++, and a C parse of one with
# errors is weighed against its C++ parse (`indexers.languages.choose_parse`). 5: C and C++
# are parsed with attribute-like macros blanked (`indexers.treesitter.macros`): a class or
# function after one (`class EXPORT_MACRO Name`, `NOINLINE_MACRO void f()`) is one again.
# 6: C++ namespace macros are parsed as the namespaces they open and close
# (`PYBIND11_NAMESPACE_BEGIN(detail)`): what follows one is no longer lost to errors.
CHUNKER_VERSION = 6


class FileChunker:
    """Cuts files into `ChunkDraft`s by language; see the module docstring for the contract."""

    def __init__(self, options: ChunkOptions, tokens: TokenCounter) -> None:
        self._options = options
        self._tokens = tokens

    def chunk(self, path: str, text: str, language: str, tags: bool = False) -> ChunkResult:
        """`tags`: with the file's code-graph tags (`tag_file`'s), from the parse the chunks
        were cut from: one parse instead of two."""
        found: list[FileTags] = []
        result = self._guarded(path, text, language, found if tags else None)
        if not tags:
            return result
        if not found:  # no tree to read them from (no parse, or cutting failed): as tag_file
            found.append(tag_file(path, text, language, self._options.max_parse_bytes))
        return replace(result, tags=found[0])

    def _guarded(self, path: str, text: str, language: str, tags: list[FileTags] | None
                 ) -> ChunkResult:  # fmt: skip
        lines: Lines | None = None
        try:
            lines = Lines.of(text, self._tokens)
            return self._chunk(path, lines, text, language, tags)
        except Exception as exc:  # the edge: any failure becomes line windows with a reason
            reason = f"{language} chunking failed ({type(exc).__name__}: {exc}); used line windows"
            return self._windows(path, text, language, lines, reason[:500])

    def _chunk(self, path: str, lines: Lines, text: str, language: str,
               tags: list[FileTags] | None) -> ChunkResult:  # fmt: skip
        pieces, reason = self._pieces(path, lines, text, language, tags)
        problem = tiling_problem(pieces, lines)
        if problem is not None:  # a chunker bug must not break the coverage contract
            reason = f"internal chunking error ({problem}); used line windows"
            pieces = text_pieces(lines, "text", self._options)
        drafts = to_drafts(pieces, lines, path, language, self._tokens)
        return ChunkResult(drafts, reason)

    def _pieces(self, path: str, lines: Lines, text: str, language: str,
                tags: list[FileTags] | None) -> tuple[list[Piece], str | None]:  # fmt: skip
        options = self._options
        if language in CODE_LANGUAGES:
            return self._code(path, lines, text, language, tags)
        if language in MARKDOWN_LANGUAGES:
            return merge_tiny(markdown_pieces(lines, options), lines, options), None
        return text_pieces(lines, language, options), None

    def _code(self, path: str, lines: Lines, text: str, language: str,
              tags: list[FileTags] | None) -> tuple[list[Piece], str | None]:  # fmt: skip
        """Pieces cut at definitions; into `tags`, when given, the tags of the same tree
        (as `tag_file` makes them: the same parse, chosen by the same rule, none on failure)."""
        options = self._options
        source = text.encode("utf-8", "replace")
        reason = skip_parse_reason(lines.blank, source, options.max_parse_bytes)
        if reason is None:
            refused: list[tuple[str, str | None]] = []  # each refusing grammar, and why

            def attempt(used: str) -> tuple[Any, float]:
                pieces, note, tree = code_pieces(lines, source, used, options)
                if pieces is None:
                    refused.append((used, note))
                    return None, 1.0
                return (pieces, note, tree), error_share(tree.root_node, lines.blank)

            chosen = choose_parse(language, text, path, attempt)  # a `.h` header may be C++
            if chosen is not None:
                used, (pieces, note, tree) = chosen
                if tags is not None:
                    with contextlib.suppress(Exception):  # as in `tag_file`: no tags, no harm
                        tags.append(extract_tags(path, text, used, tree, source))
                return merge_tiny(pieces, lines, options), note
            reason = _refusals(refused)
        return text_pieces(lines, "text", options), f"{reason}; used line windows"

    def _windows(
        self, path: str, text: str, language: str, lines: Lines | None, reason: str
    ) -> ChunkResult:
        try:
            lines = lines or Lines.of(text, self._tokens)
            pieces = text_pieces(lines, "text", self._options)
            return ChunkResult(to_drafts(pieces, lines, path, language, self._tokens), reason)
        except Exception as exc:  # even the counter failed: plain windows, tokens unknown (0)
            return ChunkResult(
                _bare_windows(path, text, language, self._options), f"{reason}; {exc}"[:800]
            )


def _refusals(refused: list[tuple[str, str | None]]) -> str | None:
    """Why no grammar's parse was used: one grammar's reason as it gave it, or each
    grammar's, named ("as C: too many syntax errors (41% of the file); as C++: …")."""
    if len(refused) < 2:
        return refused[0][1] if refused else None
    return "; ".join(f"as {_NAMES.get(used, used)}: {why}" for used, why in refused)


_NAMES = {"c": "C", "cpp": "C++"}  # the grammars a file may be parsed with in turn


def _bare_windows(
    path: str, text: str, language: str, options: ChunkOptions
) -> tuple[ChunkDraft, ...]:
    rows = str(text).split("\n")
    size = max(1, options.window_lines)
    drafts = []
    for first in range(0, len(rows), size):
        span = [i for i in range(first, min(first + size, len(rows))) if rows[i].strip()]
        if span:
            start, end = span[0] + 1, span[-1] + 1
            body = "\n".join(rows[start - 1 : end])
            drafts.append(ChunkDraft(path, language, "text", "", start, end, body))
    return tuple(drafts)


__all__ = ["CHUNKER_VERSION", "CODE_LANGUAGES", "MARKDOWN_LANGUAGES", "FileChunker"]
