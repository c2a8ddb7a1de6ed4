"""Writing file groups: write handles that create, merge and append files, and write markers."""
