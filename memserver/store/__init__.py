"""Storage adapters: LanceDB tables, the tantivy BM25 index, metadata, locks."""
