"""file -> typed Blueprint (pure: no pytest, no network)."""
