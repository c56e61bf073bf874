"""NLMeans Studio's Qt front end (PySide6 + pyqtgraph): a thin view over ``engine``'s public API."""
