"""Synced sources: websites, Git repositories and wikis read into the index (docs/sources.md)."""
