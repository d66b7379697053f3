"""The ra3 error codes; expected failures are kit `ServiceError`s carrying one of them."""

from __future__ import annotations

from moddesk.kit.errors import ServiceError, register_codes

CODES: dict[str, str] = {
    "NO_INDEX": "No index has been built or loaded for this project yet.",
    "INDEX_NOT_READY": "The index is building and the caller refused a stale or partial answer.",
    "INDEX_TIMEOUT": "Waiting for a final index timed out.",
    "PROJECT_NOT_FOUND": "The project directory does not exist or is not a SAGE mod project.",
    "SCHEMA_NOT_FOUND": "No XSD schema root could be found for the project.",
    "SCHEMA_INVALID": "The XSD schema set could not be read.",
    "SNAPSHOT_NOT_FOUND": "No snapshot exists for this project.",
    "SNAPSHOT_INVALID": "The snapshot file is corrupt or has an unsupported schemaVersion.",
    "MANIFEST_INVALID": "A compiled .manifest file is truncated or malformed.",
    "ASSET_NOT_FOUND": "No asset with that type and id is in the index.",
    "SNAPSHOT_KEPT": "A bigger snapshot built with other settings was kept instead of being replaced.",
    "PROJECT_FILE_INVALID": "The project file moddesk-ra3.toml cannot be read or holds a bad value.",
    "PROJECT_FILE_UNWRITABLE": "The project file could not be written anywhere.",
    "INCLUDE_OUTSIDE_ROOTS": "An include points outside the project, the SDK and the configured data paths.",
}
register_codes(CODES)


class Ra3Error(ServiceError):
    """An expected failure of the RA3 index (a `ServiceError` with one of `CODES` or a kit code)."""
