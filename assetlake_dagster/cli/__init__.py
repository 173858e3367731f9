"""The ``assetlake`` command line: one module per command group."""
