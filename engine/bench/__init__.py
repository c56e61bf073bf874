"""The benchmark (``measure``: the paper's Table 1 layout, ``nlmeans-studio bench``) and the other
NLMeans implementations it runs for comparison (``peers``)."""
