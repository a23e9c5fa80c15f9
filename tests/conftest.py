"""Suite-wide plugins: the per-test outcome count guard (outcome_guard.py)."""
from __future__ import annotations

from outcome_guard import OutcomeGuard


def pytest_configure(config):
    config.pluginmanager.register(OutcomeGuard(config), "hloc-outcome-guard")
