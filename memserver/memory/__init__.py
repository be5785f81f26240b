"""The memory write path: notes in (scrubbed, code kept raw, time resolved, atomised), forget."""
