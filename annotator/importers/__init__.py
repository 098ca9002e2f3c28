"""Importers: one module per source format, a registry, sniffing (``detect``) and ``import_paths``."""
