"""Data tables of the ANDREAS package (derived from the authors' public repository; see SOURCES.md)."""
