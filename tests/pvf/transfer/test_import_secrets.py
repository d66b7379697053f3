"""Secrets are refused by name and by content; game data (every DNF script type) is not."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from moddesk.kit.errors import ServiceError
from moddesk.pvf.transfer.secretfiles import secret_by_content, secret_by_name

from .conftest import Bench

PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\n"
OPENSSH = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n"
SECRETS_BY_NAME = {
    "id_rsa": "x",
    "id_ed25519": "x",
    ".env": "DEBUG=1\n",
    ".env.local": "PORT=80\n",
    ".npmrc": "registry=https://example.invalid/\n",
    ".pypirc": "[pypi]\n",
    ".netrc": "machine x\n",
    "store.p12": "x",
}
SECRETS_BY_CONTENT = {
    "notes.txt": PEM,
    "beat.key": OPENSSH,  # a .key is refused only when it IS a key
    "deploy.cfg": "API_TOKEN=abc123\nHOST=x\n",
    "cloud.ini": "[default]\naws_access_key_id = AKIA\naws_secret_access_key = abc\n",
    "sa.json": '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nx"}',
    "registry.txt": "//registry.npmjs.org/:_authToken=abc\n",
}
# every DNF script type imports, whatever its extension, and so do texts that merely mention keys
GAME_DATA = {
    f"item.{ext}": "#PVF_File\n[name]\n`Item`\n[key]\n\t1\t2\n"
    for ext in (
        "equ",
        "stk",
        "skl",
        "dgn",
        "ani",
        "act",
        "ai",
        "aic",
        "key",
        "lst",
        "str",
        "chr",
        "obj",
        "ptl",
        "map",
        "atk",
        "etc",
        "nut",
        "til",
        "txt",
    )
}
GAME_DATA["password_hint.txt"] = (
    "[password]\n`Use the PRIVATE KEY door`\nTOKEN = 3\n[name]\n`x`\n[grade]\n\t2\n"
)


@pytest.mark.parametrize(("name", "text"), sorted(SECRETS_BY_NAME.items()))
def test_a_secret_by_name_is_refused_naming_the_file(
    bench: Bench, tmp_path: Path, name: str, text: str
) -> None:
    folder = tmp_path / "my mod"
    folder.mkdir()
    (folder / "ok.equ").write_text("#PVF_File\n[name]\n`ok`\n", encoding="utf-8")
    (folder / name).write_text(text, encoding="utf-8")
    for source in (folder / name, folder):  # named directly, or inside a chosen folder
        with pytest.raises(ServiceError) as caught:
            bench.imports.prepare(bench.ws, [str(source)], "")
        assert caught.value.code == "SECRET_REFUSED" and name in caught.value.message
        assert caught.value.details["path"].endswith(name) and caught.value.hint
        assert caught.value.to_payload()["errorZh"]
    assert bench.service.plans.pending("import") is None  # nothing was frozen


@pytest.mark.parametrize(("name", "text"), sorted(SECRETS_BY_CONTENT.items()))
def test_a_secret_by_content_is_refused_in_text_and_raw_mode(
    bench: Bench, tmp_path: Path, name: str, text: str
) -> None:
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    for mode in ("text", "raw"):
        with pytest.raises(ServiceError) as caught:
            bench.imports.prepare(bench.ws, [str(source)], "", mode)  # type: ignore[arg-type]
        assert caught.value.code == "SECRET_REFUSED" and name in caught.value.message


def test_every_dnf_script_type_imports(bench: Bench, tmp_path: Path) -> None:
    folder = tmp_path / "game data"
    folder.mkdir()
    for name, text in GAME_DATA.items():
        (folder / name).write_text(text, encoding="utf-8")
    prepared = bench.imports.prepare(bench.ws, [str(folder)], "", "raw")
    targets = {i["target"] for i in bench.imports.preview(prepared["planId"], limit=200)["items"]}
    assert targets == {f"game data/{name}" for name in GAME_DATA}
    assert prepared["skipped"] == [] and prepared["skippedCount"] == 0
    bench.imports.discard(prepared["planId"])


def test_links_in_a_folder_are_listed_as_skipped(bench: Bench, tmp_path: Path) -> None:
    folder = tmp_path / "with links"
    (folder / "sub").mkdir(parents=True)
    (folder / "real.equ").write_text("#PVF_File\n[name]\n`ok`\n", encoding="utf-8")
    (folder / "to_file.equ").symlink_to(folder / "real.equ")
    (folder / "to_folder").symlink_to(folder / "sub", target_is_directory=True)
    (folder / "dangling.equ").symlink_to(folder / "missing.equ")
    prepared = bench.imports.prepare(bench.ws, [str(folder)], "")
    assert prepared["files"] == 1
    skipped = {Path(s["source"]).name: s["reason"] for s in prepared["skipped"]}
    assert skipped == {n: "symbolic link" for n in ("to_file.equ", "to_folder", "dangling.equ")}
    assert bench.imports.preview(prepared["planId"])["skipped"] == prepared["skipped"]
    bench.imports.discard(prepared["planId"])


def test_import_prepare_checks_the_expected_revision(bench: Bench, tmp_path: Path) -> None:
    (tmp_path / "a.equ").write_text("#PVF_File\n[name]\n`a`\n", encoding="utf-8")
    with pytest.raises(ServiceError) as caught:
        bench.imports.prepare(bench.ws, [str(tmp_path / "a.equ")], "", expected_revision=bench.revision + 5)
    assert caught.value.code == "STALE_WORKSPACE"
    prepared = bench.imports.prepare(
        bench.ws, [str(tmp_path / "a.equ")], "", expected_revision=bench.revision
    )
    bench.imports.discard(prepared["planId"])


def test_names_and_contents_that_are_not_secrets() -> None:
    for name in ("id_rsa.pub", "env.equ", "credentials", "config.json", "my.key", "environment.lst"):
        assert secret_by_name(PurePath("mods", name)) is None, name
    assert secret_by_name(PurePath(".aws", "credentials")) and secret_by_name(
        PurePath(".docker", "config.json")
    )
    assert secret_by_content(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n") is None
    assert secret_by_content(b"#PVF_File\n[token]\n\t3\n") is None


@given(st.binary(max_size=2048), st.text(max_size=40))
def test_the_secret_checks_never_raise(data: bytes, name: str) -> None:
    secret_by_content(data)
    secret_by_name(PurePath(name or "x"))


def test_a_prepare_task_reports_what_the_person_did_with_its_plan(bench: Bench, tmp_path: Path) -> None:
    folder = tmp_path / "to import"
    folder.mkdir()
    (folder / "a.equ").write_text("#PVF_File\n[name]\n`a`\n", encoding="utf-8")
    tasks = bench.service.tasks
    # an import prepared as a task (as over MCP), then applied by the person on the page
    prepared_task = tasks.start(
        "import.prepare", lambda ctx: bench.imports.prepare(bench.ws, [str(folder)], "")
    )
    plan = tasks.wait(prepared_task, 60)["result"]
    assert bench.service.task_status(prepared_task)["planState"] == "pending"
    keys = [i["key"] for i in bench.imports.preview(plan["planId"])["items"]]
    applied = bench.imports.apply(plan["planId"], bench.revision, keys, by="person")
    status = bench.service.task_status(prepared_task)
    assert status["planState"] == "applied" and status["appliedByPerson"] is True
    assert status["resultingRevision"] == applied["revision"] and status["discardedByPerson"] is False
    # an export discarded by the person
    export_task = tasks.start(
        "export.prepare", lambda ctx: bench.exports.prepare(bench.ws, bench.revision, "selection", ["etc"])
    )
    export_plan = tasks.wait(export_task, 60)["result"]
    bench.exports.discard(export_plan["planId"], by="person")
    dropped = bench.service.task_status(export_task)
    assert dropped["planState"] == "discarded" and dropped["discardedByPerson"] is True
