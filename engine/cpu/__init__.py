"""CPU plumbing shared by the numba filters of both products.

Whether a filter's first call compiles (``compiled``), and parallel launches that take turns where
numba's threading layer needs it (``launches``).
"""
