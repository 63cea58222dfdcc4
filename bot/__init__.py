"""groundbot composition root: configuration, wiring, CLI and admin commands."""
