"""The harness's own tests. tests/drills and tests/seeds hold material the tests hand to real cells
(crashing scenarios, bug-seeding plugins): never collect them here."""

collect_ignore = ["drills", "seeds"]
