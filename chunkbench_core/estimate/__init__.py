"""Time before money: engine calibration, the expected wall time of a run, estimate against actual, a sampled
corpus, and the uncached index time.

- :mod:`.calibration`: how fast each embedding engine runs here (timed once, kept in ``calibration.json``);
- :mod:`.predict`: the expected time per corpus model x strategy and for parsing, and its terminal table;
- :mod:`.feedback`: a run's actual times against its estimate, and the corrections the next one uses;
- :mod:`.sampling`: every document holding evidence plus a seeded sample of the others;
- :mod:`.index_time`: a build's index time as if nothing had been cached (measured or derived).
"""

from .errors import EstimateError

__all__ = ["EstimateError"]
