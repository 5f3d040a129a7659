"""`perfgate bisect`: after the A/B gate says REGRESSION, the first image whose step is slower.

Given images in build order whose ends the gate judged (first PASS-like good, last
REGRESSION), each probe runs the gate's own A/B job (perfgate.bisect.probe) of a midpoint
against the good end, one allocation per row, and the search (perfgate.bisect.search) halves
the range until one image is left: log2(n - 1) probes. The state and evidence are bisect.json
(perfgate.bisect.state), the answer a page beside it (perfgate.bisect.report); the course,
plan, consent and Ctrl-C are perfgate.bisect.run; the command line is perfgate.cli.bisect.
"""
