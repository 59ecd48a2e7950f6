"""`spline-testbed`: sender -> router -> receiver namespaces with shaped rate, random loss and
(where the kernel has netem) delay, running iperf3 flows with captures and ground-truth counters.

Modules: `netns` (namespaces, veth, qdiscs, rules, processes as context managers), `matrix`
(experiment specs), `run` (one run), `analyse` (the library's view of a capture), `results`
(tidy table, Jain index), `cli` (the command).
"""
