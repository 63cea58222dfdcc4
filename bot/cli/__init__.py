"""The `groundbot` command line and its subcommands (chat, ask, ingest, the platform runners, serve, report, calibrate)."""
