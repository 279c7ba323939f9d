"""Probes of a rented GPU node: typed samples and pure parsers of the tools' text output."""
