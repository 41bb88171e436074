"""The Python client library lives in clients/python (a package of its own); the suite imports
it from its source tree, exactly as ``pip install ./clients/python`` would install it."""

from __future__ import annotations

import sys
from pathlib import Path

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
if str(CLIENT / "src") not in sys.path:
    sys.path.insert(0, str(CLIENT / "src"))
