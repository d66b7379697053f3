"""Secret-looking local files an import never reads into a plan: by name, then by content.

Game data is never refused for its extension alone: DNF's own ``.key`` scripts import like any
other script; a ``.key`` (or any file) is refused only when its text IS a private key. The name
rules cover files whose only purpose is credentials (SSH keys, ``.env``, ``.npmrc``, ``.pypirc``,
cloud CLI credentials, keystores); the content rules catch the same secrets under other names.
"""

from __future__ import annotations

import re
from pathlib import PurePath

# names (lower case) that only ever hold credentials
SECRET_NAMES = frozenset(
    {
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "id_ecdsa_sk",
        "id_ed25519_sk",
        ".npmrc",
        ".pypirc",
        ".netrc",
        "_netrc",
        ".git-credentials",
        ".dockercfg",
        ".htpasswd",
        ".pgpass",
        "credentials.db",
        "access_tokens.db",
        "accesstokens.json",
        "application_default_credentials.json",
    }
)
SECRET_SUFFIXES = (".p12", ".pfx", ".jks", ".keystore", ".ppk", ".kdbx", ".asc.key")
# files named ``credentials`` / ``config`` count as secrets inside these cloud CLI folders
CLOUD_FOLDERS = {".aws": ("credentials",), ".azure": ("accesstokens.json",), ".docker": ("config.json",)}

_PRIVATE_KEY = re.compile(
    rb"-----BEGIN ((RSA|DSA|EC|OPENSSH|ENCRYPTED|PGP|SSH2 ENCRYPTED) )?PRIVATE KEY( BLOCK)?-----"
)
_PUTTY_KEY = re.compile(rb"^PuTTY-User-Key-File-\d+:", re.M)
_CLOUD_KEYS = re.compile(
    rb"(?im)^\s*(aws_secret_access_key|aws_session_token)\s*=|\"private_key\"\s*:\s*\"-----BEGIN"
    rb"|\"type\"\s*:\s*\"service_account\"|^\s*//[^\s]+:_authToken\s*="
)
# an .env line: NAME=value, NAME naming a secret
_ENV_SECRET = re.compile(
    rb"(?m)^\s*(export\s+)?[A-Za-z_][A-Za-z0-9_]*(SECRET|TOKEN|PASSWORD|PASSWD|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Za-z0-9_]*\s*=\s*\S"
)
CONTENT_PROBE_BYTES = 256 * 1024


def _is_env_name(name: str) -> bool:
    return name == ".env" or name.startswith(".env.") or name.endswith(".env")


def secret_by_name(path: PurePath) -> str | None:
    """Why a file's name alone marks it as a secret, or None."""
    name = path.name.lower()
    parent = path.parent.name.lower()
    if name in SECRET_NAMES or (name.startswith("id_") and name.endswith("_key")):
        return "a credentials or private key file by its name"
    if _is_env_name(name):
        return "an .env file (environment secrets)"
    if name.endswith(SECRET_SUFFIXES):
        return "a key store by its extension"
    if name in CLOUD_FOLDERS.get(parent, ()):
        return f"cloud CLI credentials ({parent}/{name})"
    return None


def secret_by_content(data: bytes) -> str | None:
    """Why a file's bytes mark it as a secret (a private key block, cloud or .env credentials), or None."""
    head = data[:CONTENT_PROBE_BYTES]
    if _PRIVATE_KEY.search(head) or _PUTTY_KEY.search(head):
        return "it contains a private key block"
    if _CLOUD_KEYS.search(head):
        return "it contains cloud or package-registry credentials"
    if _ENV_SECRET.search(head) and _mostly_assignments(head):
        return "it is an .env-style file with secret values"
    return None


def _mostly_assignments(head: bytes) -> bool:
    """Most non-blank, non-comment lines are NAME=value (an .env file, not a script that sets one)."""
    lines = [line.strip() for line in head.splitlines() if line.strip() and not line.strip().startswith(b"#")]
    if not lines:
        return False
    assignments = sum(1 for line in lines if re.match(rb"^(export\s+)?[A-Za-z_][A-Za-z0-9_]*\s*=", line))
    return assignments * 2 > len(lines)
