"""The timeline: instants and their file names, the active and archived timelines, and the typed
records of timeline files (commit metadata, plans, service metadata) with their one codec."""
