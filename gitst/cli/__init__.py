"""Command-line layer: parses, calls the core, renders. No business logic lives here."""
