"""Logging: text or JSON lines, and the redaction of secrets from every record."""
