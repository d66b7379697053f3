"""Compiled SAGE `.manifest` files (versions 5-7): assets, source files and the compiled reference graph.

Layout after OpenSAGE's `ManifestFile` notes (re-derived on real files): a header, `assetCount`
fixed-size entries, then four buffers — asset references as (typeId, instanceId) pairs, referenced
manifest names, asset names (`Type:Id`) and source file names. `typeId = FastHash(typeName)`
(case-sensitive), `instanceId = FastHash(lower(id))`, so hashing the schema's type names names every
type, and hashing ids we know names every reference target.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from moddesk.ra3.core.errors import Ra3Error

_M32 = 0xFFFFFFFF
MAX_ASSETS = 2_000_000


def fast_hash(data: bytes) -> int:
    """EA's FastHash (a SuperFastHash variant) as BinaryAssetBuilder computes type and instance ids."""
    n = len(data)
    if n == 0:
        return 0x1337C0DE
    h = n
    i = 0
    for _ in range(n >> 2):
        h = (h + (data[i] | data[i + 1] << 8)) & _M32
        h ^= (((data[i + 2] | data[i + 3] << 8) ^ (h << 5)) << 11) & _M32
        h = (h + (h >> 11)) & _M32
        i += 4
    extra = n & 3
    if extra == 1:
        h = (h + data[i]) & _M32
        h ^= (h << 10) & _M32
        h = (h + (h >> 1)) & _M32
    elif extra == 2:
        h = (h + (data[i] | data[i + 1] << 8)) & _M32
        h ^= (h << 11) & _M32
        h = (h + (h >> 17)) & _M32
    elif extra == 3:
        h = (h + (data[i] | data[i + 1] << 8)) & _M32
        h ^= (h << 16) & _M32
        h ^= (data[i + 2] << 18) & _M32
        h = (h + (h >> 11)) & _M32
    h ^= (h << 3) & _M32
    h = (h + (h >> 5)) & _M32
    h ^= (h << 2) & _M32
    h = (h + (h >> 15)) & _M32
    h ^= (h << 10) & _M32
    return h


def type_id(type_name: str) -> int:
    """The compiled type id of a schema type name (case-sensitive)."""
    return fast_hash(type_name.encode("latin-1", "replace"))


def instance_id(asset_id: str) -> int:
    """The compiled instance id of an asset id (case-insensitive: hashed lower-case)."""
    return fast_hash(asset_id.lower().encode("latin-1", "replace"))


@dataclass(slots=True)
class ManifestAsset:
    """One compiled asset: ids, its `Type:Id` name, its source file and what it references."""

    type_id: int
    instance_id: int
    name: str
    source: str
    references: list[tuple[int, int]]

    @property
    def type_name(self) -> str:
        """The type part of the name; RA3 art names have three parts (`W3dContainer:W3DContainer:X`)."""
        return self.name.split(":", 1)[0] if ":" in self.name else ""

    @property
    def id(self) -> str:
        """The id part: the last `:` segment."""
        return self.name.rsplit(":", 1)[-1]


@dataclass(slots=True)
class Manifest:
    """A parsed manifest."""

    path: str
    version: int
    big_endian: bool
    linked: bool
    assets: list[ManifestAsset] = field(default_factory=list)
    referenced_manifests: list[tuple[int, str]] = field(default_factory=list)

    @property
    def reference_count(self) -> int:
        """Total compiled reference edges."""
        return sum(len(a.references) for a in self.assets)


def _bad(path: str, why: str) -> Ra3Error:
    return Ra3Error(
        "MANIFEST_INVALID", f"{path}: {why}", hint="rebuild the manifest or remove it from builtmods"
    )


def _cstr(buf: bytes, offset: int) -> str:
    end = buf.find(b"\0", offset)
    if end < 0:
        end = len(buf)
    return buf[offset:end].decode("latin-1")


def parse_manifest(data: bytes, path: str = "<manifest>") -> Manifest:
    """Parse manifest bytes; raises `MANIFEST_INVALID` for truncated or inconsistent input."""
    if len(data) < 4 + 44:
        raise _bad(path, "too short for a header")
    first = struct.unpack_from("<I", data, 0)[0]
    if first == 0:
        if len(data) < 8 + 44:
            raise _bad(path, "too short for a v7 header")
        version, big, linked = struct.unpack_from("<HBB", data, 4)
        pos = 8
    else:
        big, linked, version = struct.unpack_from("<BBH", data, 0)
        pos = 4
    if version not in (5, 6, 7):
        raise _bad(path, f"unsupported version {version}")
    endian = ">" if big else "<"
    if big:
        version = struct.unpack_from(">H", data, 2 if first else 4)[0]
        if version not in (5, 6, 7):
            raise _bad(path, f"unsupported version {version}")
    (
        _checksum,
        _all_types,
        asset_count,
        _total_instance,
        _max_instance,
        _max_reloc,
        _max_imports,
        ref_size,
        manifest_names_size,
        names_size,
        sources_size,
    ) = struct.unpack_from(endian + "11I", data, pos)
    pos += 44
    entry_size = 44 + (4 if version >= 6 else 0)
    if asset_count > MAX_ASSETS or pos + asset_count * entry_size > len(data):
        raise _bad(path, f"asset table of {asset_count} entries does not fit the file")
    entries = []
    for _ in range(asset_count):
        entries.append(struct.unpack_from(endian + "11I", data, pos))
        pos += entry_size
    total = ref_size + manifest_names_size + names_size + sources_size
    if pos + total > len(data):
        raise _bad(path, "buffers run past the end of the file")
    refs_buf = data[pos : pos + ref_size]
    pos += ref_size
    mnames = data[pos : pos + manifest_names_size]
    pos += manifest_names_size
    names = data[pos : pos + names_size]
    pos += names_size
    sources = data[pos : pos + sources_size]
    manifest = Manifest(path, version, bool(big), bool(linked))
    off = 0
    while off < len(mnames):
        kind = mnames[off]
        text = _cstr(mnames, off + 1)
        manifest.referenced_manifests.append((kind, text))
        off += len(text.encode("latin-1")) + 2
    pair = struct.Struct(endian + "II")
    for e in entries:
        tid, iid, _th, _ih, ref_off, ref_count, name_off, src_off = e[:8]
        if ref_off + ref_count * 8 > len(refs_buf) or name_off >= max(len(names), 1):
            raise _bad(path, "an asset entry points outside its buffers")
        refs = [pair.unpack_from(refs_buf, ref_off + 8 * k) for k in range(ref_count)]
        source = _cstr(sources, src_off) if src_off < len(sources) else ""
        manifest.assets.append(ManifestAsset(tid, iid, _cstr(names, name_off), source, refs))
    return manifest


def read_manifest(path: Path) -> Manifest:
    """Read and parse a manifest file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _bad(str(path), f"cannot read: {exc}") from exc
    return parse_manifest(data, str(path))
