"""What a run becomes for people and files: the report document, its charts, and the run JSON."""
