"""File groups and file slices: file names, base files, log files and their blocks, reading one slice."""
