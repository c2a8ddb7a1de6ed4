"""Configuration: hoodie.properties keys, defaults and their parsing; the settings data files are written with."""
