"""groundbot storage: transcripts (SQLModel), the LanceDB chunk index, ingestion."""
