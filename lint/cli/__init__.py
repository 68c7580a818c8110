"""The command line: thin click commands around the engine, the reports and the simulator.

`main` holds the group and `numaguard lint`/`numaguard rules`; `numa` the simulator and node
commands. Nothing else in numaguard imports this package.
"""
