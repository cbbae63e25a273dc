"""Release: a study's data out and in. Bundles carry a whole study to another (export, verify,
import as data only); table imports add completions, judgments or strategy labels from a CSV or
JSON Lines file. Either import is all or nothing."""

from heart.release._bundles import (
    BUNDLE_VERSION,
    MANIFEST,
    Bundle,
    export_bundle,
    import_bundle,
    read_bundle,
    store_bundle,
)
from heart.release._chunk import Row
from heart.release._rows import RACE_ATTEMPTS, TABLES, ImportSummary
from heart.release._table_imports import (
    TABLE_KINDS,
    completion_rows,
    import_table,
    judgment_rows,
    label_rows,
)

__all__ = [
    "BUNDLE_VERSION",
    "MANIFEST",
    "RACE_ATTEMPTS",
    "TABLES",
    "TABLE_KINDS",
    "Bundle",
    "ImportSummary",
    "Row",
    "completion_rows",
    "export_bundle",
    "import_bundle",
    "import_table",
    "judgment_rows",
    "label_rows",
    "read_bundle",
    "store_bundle",
]
