"""Key generators: how a record becomes a record key and a partition path."""
