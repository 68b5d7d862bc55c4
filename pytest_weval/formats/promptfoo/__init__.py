"""promptfoo-shaped suites (promptfoo's ``promptfooconfig.yaml``, AgentV v5 ``suite.yaml``) ->
a typed ``PromptfooSuite`` (docs/promptfoo.md). Pure: no pytest, no HTTP."""
