"""CPU plumbing shared by the numba filters of both products.

Whether a filter's first call compiles (``compiled``), parallel launches that take turns where
numba's threading layer needs it (``launches``), how many threads a call uses and how they
share a loop's work (``threads``), the row arithmetic (``weighted_rows``), and the fastmath flags
every kernel keeps to, so that every run writes the same bits (``fastmath``).
"""
