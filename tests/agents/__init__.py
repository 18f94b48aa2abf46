"""End-to-end tests with real agent CLIs (see test_real_agents.py)."""
