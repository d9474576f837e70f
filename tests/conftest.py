import sys
from pathlib import Path

# Make the test helpers (tests/hostile.py, ...) importable as top-level modules: `import hostile`.
sys.path.insert(0, str(Path(__file__).resolve().parent))
