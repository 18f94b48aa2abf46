"""Shared test helpers: the end-to-end harness, plugin distributions, the escape corpus, providers."""
