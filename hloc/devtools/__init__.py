"""Developer tools shipped with hloc so tests and tools/ share them (never used by the CLI)."""
