"""The `tuneplan` command line: one module per command, sharing one table writer and one error
style."""
