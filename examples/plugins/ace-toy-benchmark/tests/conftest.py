"""The plugin's sources on the path (what `pip install -e .` does), so its tests run from a checkout."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
