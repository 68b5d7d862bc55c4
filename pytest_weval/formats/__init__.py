"""AgentV eval YAML and AgentEvals ``EVAL.yaml`` files -> the same items as blueprints (pure).

``model`` holds the typed objects every other layer reads; the loader is the one place that
knows the three dialects' spellings (docs/agent-formats.md).
"""
