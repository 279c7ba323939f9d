"""The probe history: runs and their samples in SQLite (store.py), saved host groups, leases and the
ledger."""
