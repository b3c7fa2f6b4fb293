"""From judged results to what people read: report.json/html/md, junit.xml, repros, diff, history.

The package itself imports nothing, so that a command needing one renderer (or only `--help`)
does not pay for all of them; `harness report` is harness.report.command.
"""
