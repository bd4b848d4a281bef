"""Makes ag03_streams importable however pytest was asked to import test modules."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.append(_HERE)  # appended, so it never shadows the code under test
