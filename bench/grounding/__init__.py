"""The grounding benchmark (`python -m bench.grounding`): does groundbot answer what its
knowledge base holds and refuse everything else? run.py asks the suites (HaluEval, SQuAD, ParsiNLU,
CLAPNQ in clapnq.py, groundbot's own docs in docs_suite.py, follow-ups turn by turn in
conversations.py) through App.ask; harness.py holds what they share, replay_server.py plays the
LLM, report.py writes the tables."""
