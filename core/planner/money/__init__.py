"""What a run costs and what can go wrong: prices, cost, failures and checkpoints, storage, sanity
checks."""
