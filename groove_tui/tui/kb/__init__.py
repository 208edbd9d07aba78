"""The knowledge base open in the explorer: opening and indexing it, and following its edits."""
