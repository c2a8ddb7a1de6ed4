"""Table configuration: hoodie.properties keys, defaults and their parsing."""
