"""Slack adapter: slack-bolt events, buttons and slash commands in, core `Incoming` messages
to the backend, decisions back out as Block Kit messages in the question's thread.

By concern: `rendering` (Block Kit), `markup` (Slack markup -> question), `dedupe` (redelivered
events handled once), `threads` (thread replies that are follow-ups without a mention),
`thread_answers` (whether a question's answer is already in its thread), `handlers` (questions
and buttons), `admin` (slash commands), `review` (the review desk's cards and buttons), `http`
(the Events API endpoint), `lifecycle` (the bolt App, Socket Mode or HTTP).
"""

from adapters.slack.http import SlackHTTPServer, events_endpoint
from adapters.slack.lifecycle import SlackAdapter
from adapters.slack.markup import question_text

__all__ = ["SlackAdapter", "SlackHTTPServer", "events_endpoint", "question_text"]
