"""The command line: thin click commands around the engine, the reports and the simulator.

`start` is the console script: a plainly valid `numaguard lint` command line is read there
without click (`lint_args` declares lint's options, `lint_command` runs the lint), everything
else goes to the click group in `main` (`numaguard lint`/`numaguard rules`; `numa` the simulator
and node commands, `audit`, `webhook`, imported when run). Nothing else in numaguard imports
this package.
"""
