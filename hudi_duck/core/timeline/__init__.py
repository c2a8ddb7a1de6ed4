"""The timeline: instants and their file names, the active and archived timelines, commit metadata."""
