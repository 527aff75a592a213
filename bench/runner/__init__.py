"""The one benchmark runner (``bench/run``): the rules every figure in bench/README.md obeys.

Why a package and not prose: a rule written in a README is a rule a benchmark can forget. Here
the runner, not the benchmark, decides the order of the sides (the first side alternates between
rounds), refuses fewer than 3 rounds, measures the CPU time of each side's whole process tree
(a subreaper collects every descendant, killed ones included), checks that both sides produced
the same output, reports medians, writes ``bench/results/<name>.json`` and regenerates the
figures tables of bench/README.md from those files.
"""
