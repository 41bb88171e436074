"""Where the shared evaluation data lives: ``../shared/data`` beside the project (CI puts it
there), or ``ENGRAM_SHARED_DATA``. It is read in place, never copied into the project."""

from __future__ import annotations

import os
from pathlib import Path

from config.env import BASE_DIR

SHARED_DATA = Path(os.environ.get("ENGRAM_SHARED_DATA", BASE_DIR.parent / "shared" / "data"))
SCIFACT = SHARED_DATA / "scifact"
LOCOMO = SHARED_DATA / "locomo" / "locomo-dev.json"
