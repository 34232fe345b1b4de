"""Slurm hostlists, expanded and compressed as Slurm does (the Rust ``cluster_resolver::hostlist``).

>>> from tfcluster import hostlist
>>> hostlist.expand("n[009-011],gpu1")
['n009', 'n010', 'n011', 'gpu1']
>>> hostlist.compress(["n1", "n2", "n3"])
'n[1-3]'
"""

from tfcluster._native import hostlist_compress as compress
from tfcluster._native import hostlist_expand as expand

__all__ = ["compress", "expand"]
