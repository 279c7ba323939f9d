"""The catalog's pieces of the window (the price refresh button; a catalog view to come)."""
