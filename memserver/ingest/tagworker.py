"""The tags worker process that `ingest.tagging` starts beside the chunker: jobs in on stdin,
each file's tags in row form (`store.graphpart`) out, until the input ends.

It imports what tagging a file takes and nothing more (`indexers.tagfile`: tree-sitter and
the tags extractor; the row form): not the chunker, the text modules, the store nor Arrow.
Its start is CPU time on the core it shares with the indexing: 0.048 s (interpreter and
imports) instead of 0.072 s when it imported the chunker's modules; its CPU for click's 65
files 0.49 s instead of 0.53 (getrusage, three runs each).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sys
from typing import IO

from indexers.tagfile import tag_file
from memserver.store.graphpart import graph_part

__all__ = ["Job", "rows", "serve_stdio"]

Job = tuple[str, str, str]  # (path, text, language)


def rows(job: Job, max_parse_bytes: int) -> object:
    """A file's tags in row form (`store.graphpart.GraphPart`)."""
    return graph_part(tag_file(*job, max_parse_bytes))


def _serve(source: IO[bytes], sink: IO[bytes]) -> None:
    """The worker's loop: a chunk of jobs in, their tags out, until the input ends."""
    parent = os.getppid()
    while True:
        try:
            max_parse_bytes, jobs = pickle.load(source)
        except EOFError:
            return
        answers = []
        for job in jobs:
            if os.getppid() != parent:  # the indexing process is gone (killed): so are we
                return
            answers.append(rows(job, max_parse_bytes))
        pickle.dump(answers, sink, pickle.HIGHEST_PROTOCOL)
        sink.flush()


def serve_stdio() -> None:
    """The worker process: jobs on stdin, answers on (a copy of) stdout."""
    sink = os.fdopen(os.dup(1), "wb")  # the answers' channel, and nothing else
    os.dup2(2, 1)  # whatever prints goes to stderr
    sys.stdout = sys.stderr
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt), sink:
        _serve(sys.stdin.buffer, sink)
