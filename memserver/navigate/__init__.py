"""Navigation over the stored code graph: outline, symbol, references and neighbours, and
the read of the graph recall's graph arm uses. A service: it reads the store through
`IndexStore` and resolves with `memserver.graph`."""
