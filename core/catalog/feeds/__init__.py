"""Parsers of the field's public price catalogs (SkyPilot's vms.csv, dstack's gpuhunt CSVs) into
offers.

Pure functions over text: no network, no files. :mod:`core.catalog.refresh` downloads and writes;
these modules only turn a catalog's rows into :class:`~core.catalog.feeds.offer.Offer` records (one
price each) and say which rows they skipped and why, so a refresh can be checked before anything is
written.
"""
