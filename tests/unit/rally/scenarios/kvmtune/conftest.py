"""The scenarios' tests run with Rally's plugins loaded and no poll waits
(tests/unit/rally/scenarios/fakenova.py: the in-memory Nova)."""

from tests.unit.rally.scenarios.fakenova import no_waiting  # noqa: F401
