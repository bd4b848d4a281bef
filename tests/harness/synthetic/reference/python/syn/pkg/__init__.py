"""The synthetic chapter's package (given)."""
