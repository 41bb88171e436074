"""Portability: an account exported to one versioned, checksummed archive and imported into
another account, here or on another installation (docs/portability.md).

Layers: ``services`` (``account_export``, ``account_import``: the writes), ``apis`` (the
export and import operations of the API) and ``admin`` (the owners' export action, import form,
jobs with a progress bar). Its algorithm modules:

- ``jobs``: export and import as Celery jobs (``PortabilityJob``): enqueued after the actor's
  checks, claimed by compare-and-set, progress written on a connection of its own, every
  failure ending ``failed`` with its code and the file and line at fault;

- ``kinds``: what a kind of row is (``Kind``), the references between rows
  (``{"ref": "<kind>:<id>"}``), what an export reads and an import remaps (``ExportScope``,
  ``ImportScope``), and the registry: each app declares its kinds in
  ``<app>/services/portability.py`` or ``<app>/portability/services.py`` (``KINDS``), found
  by name at run time so core imports no app;
- ``archive``: the format (a gzipped tar of one JSONL file per kind and ``manifest.json``),
  writing it, and reading it back with every check (checksums, counts, fields, references)
  before anything is written;
- ``upgrades``: the table of upgrade hooks from one format version to the next;
- ``idmaps``: the compact id sets and maps an import holds (``IdSet``, ``IdMap``: machine
  arrays searched by bisection, 8 and 16 bytes an id)."""
