"""Key generators: how a record becomes a record key and a partition path."""

from .factories import key_generator_from_table_config, key_generator_from_write_options
from .generators import KeyGenerator

__all__ = ["KeyGenerator", "key_generator_from_table_config", "key_generator_from_write_options"]
