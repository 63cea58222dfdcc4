"""The term selector: which words of the earlier turns a follow-up needs (core/retrieve/terms.py)."""
