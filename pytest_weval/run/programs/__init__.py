"""Programs named by agent eval files, run only when the user allows it (``--weval-allow-exec``,
docs/rulings.md ruling 27): ``runner.py`` starts them in a stripped environment, in their own
process group, with a timeout and output caps; ``code_judge.py`` and ``cli_target.py`` speak the
two protocols (docs/agent-formats.md). Their one user is ``run/agent.py``.
"""
