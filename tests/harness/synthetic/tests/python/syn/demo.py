"""The synthetic chapter's demonstration: prints a sum of the recorded numbers."""

import json
import os
from pathlib import Path

from pkg import calc

recorded = json.loads((Path(os.environ["COURSE_FIXTURES"]) / "numbers.json").read_text(encoding="utf-8"))
print(f"total of {recorded['values']}: {calc.total(recorded['values'])}")
