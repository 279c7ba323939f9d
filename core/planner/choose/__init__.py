"""Which hardware to pick: the catalog-wide search, the user's choices kept, and advice when nothing
fits."""
