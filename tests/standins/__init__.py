"""Stand-ins of the platforms groundbot talks to, for the tests.

A stand-in is a local server on 127.0.0.1 speaking the platform's own HTTP API (and, for
Slack, its Socket Mode websocket) in the documented shapes, so the real client libraries
(python-telegram-bot, slack-sdk and slack-bolt, openai, notion-client, httpx, LanceDB's object
store) are tested for real, over real sockets, with no network access. The stand-ins written
here record the requests they were sent, so a test asserts what groundbot actually sent, and
can be told to fail the way the platform does (a 429 with Retry-After, a 500, a 401); the S3
one is moto's server, started as a subprocess.

  telegram.py    the Telegram Bot API (long polling and webhooks)
  slack.py       the Slack Web API and the Socket Mode websocket
  openai.py      an OpenAI-compatible chat-completions server
  confluence.py  Confluence's content REST API, for the wiki sources
  notion.py      the Notion API at version 2025-09-03, for the wiki sources
  s3.py          an S3-compatible object store (moto's server), for the chunk index on object storage
"""
