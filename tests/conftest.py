"""The harness's own tests. tests/drills and tests/seeds hold material the tests hand to real cells
(crashing scenarios, bug-seeding plugins): never collect them here.

The tests build cells named drill-gpu, secret-cpu, bisect.seamtoy...: those envs, bisect answers
and clones go to a cache of the tests' own ($SEAMS_TEST_CACHE, default ~/.cache/xla-seams-tests),
never into the user's ~/.cache/xla-seams. uv's download cache stays shared, so a warm machine
builds them from local wheels. Set here, at import, so every subprocess a test starts inherits it.
"""

import os
from pathlib import Path

TEST_CACHE = Path(os.environ.get("SEAMS_TEST_CACHE") or Path.home() / ".cache" / "xla-seams-tests")
os.environ["SEAMS_ENVS_DIR"] = str(TEST_CACHE / "envs")
os.environ["SEAMS_BISECT_CACHE"] = str(TEST_CACHE / "bisect")
os.environ["SEAMS_REPOS_DIR"] = str(TEST_CACHE / "repos")

collect_ignore = ["drills", "seeds"]
