import sys
from pathlib import Path

# ``helpers`` is a plain module beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
