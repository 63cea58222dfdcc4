"""Chat platform adapters: translate platform events to core messages and back."""
