"""Where the browser tests find Chromium and put their screenshots (test-artifacts/, ignored)."""

from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
