"""The benchmark (``measure``) and the other NLMeans implementations it runs for comparison (``peers``).

``measure`` lays its results out as the paper's Table 1 and runs as ``nlmeans-studio bench``.
"""
