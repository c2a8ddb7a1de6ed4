"""Indexes that locate record keys: bloom filters in base file footers, bucket index."""
