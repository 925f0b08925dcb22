"""Graph traversal over the store: neighbourhoods, paths, subgraphs."""
