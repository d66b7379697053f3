"""Query API contracts: paging with signed cursors, forward-reference bounds, argument errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from moddesk.kit.errors import ServiceError
from moddesk.ra3.core.index import ModIndex
from moddesk.ra3.core.project import detect_project
from moddesk.ra3.core.query import QueryApi
from moddesk.ra3.core.sample import write_sample_project


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> QueryApi:
    index = ModIndex(detect_project(write_sample_project(tmp_path_factory.mktemp("q"))))
    index.build()
    return QueryApi(index)


def test_paging_walks_every_item_once(api: QueryApi) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        page = api.list_assets_by_type("GameObject", limit=2, cursor=cursor)
        seen += [a["id"] for a in page["assets"]]
        assert page["returned"] <= 2
        cursor = page["nextCursor"]
        if cursor is None:
            break
        assert page["truncated"] is True
    full = api.list_assets_by_type("GameObject", limit=100)
    assert seen == [a["id"] for a in full["assets"]] and len(seen) == full["total"]


def test_cursor_bound_to_its_query(api: QueryApi) -> None:
    cursor = api.list_assets_by_type("GameObject", limit=1)["nextCursor"]
    with pytest.raises(ServiceError) as err:
        api.list_assets_by_type("WeaponTemplate", limit=1, cursor=cursor)
    assert err.value.code == "INVALID_CURSOR"
    with pytest.raises(ServiceError) as err2:
        api.list_assets_by_type("GameObject", limit=1, cursor=cursor[:-3] + "AAA")
    assert err2.value.code == "INVALID_CURSOR"


def test_limits_validated(api: QueryApi) -> None:
    with pytest.raises(ServiceError) as err:
        api.find_asset("SampleTank", limit=0)
    assert err.value.code == "INVALID_ARGUMENT"
    with pytest.raises(ServiceError):
        api.find_asset("   ")


def test_prefix_and_derived_types(api: QueryApi) -> None:
    render = api.list_assets_by_type("BaseRenderAssetType")
    assert {a["type"] for a in render["assets"]} == {"W3DContainer", "W3DMesh"}
    only = api.list_assets_by_type("GameObject", prefix="sample")
    assert [a["id"] for a in only["assets"]] == ["SampleScout", "SampleTank", "SampleTank"]
    unknown = api.list_assets_by_type("NotAType")
    assert unknown["total"] == 0 and "not an asset type" in unknown["note"]


def test_find_asset_miss_explains_and_suggests(api: QueryApi) -> None:
    miss = api.find_asset("SampleTan")
    assert miss["found"] is False and "SampleTank".lower() in miss["note"].lower()
    wrong_type = api.find_asset("SampleTank", "WeaponTemplate")
    assert "only as GameObject" in wrong_type["note"]


def test_forward_depth_and_inherit_chain(api: QueryApi) -> None:
    one = api.get_asset_references("GameObject", "SampleScout", depth=1)
    kinds = [(e["via"]["kind"], e["to"]["id"] if e["to"] else None, e["definedIn"]) for e in one["edges"]]
    # inheritFrom costs no depth: BaseVehicle's own references come with definedIn = BaseVehicle
    assert ("inheritFrom", "BaseVehicle", None) in kinds
    assert ("attribute", "BaseCannon", {"type": "GameObject", "id": "BaseVehicle"}) in kinds
    with pytest.raises(ServiceError) as err:
        api.get_asset_references("GameObject", "SampleScout", depth=4)
    assert err.value.code == "INVALID_ARGUMENT"


def test_forward_target_types_by_assignability(api: QueryApi) -> None:
    out = api.get_asset_references("GameObject", "SampleTank", target_types=["BaseRenderAssetType"])
    targets = [e["to"]["type"] for e in out["edges"] if e["via"]["kind"] != "inheritFrom"]
    assert targets == ["W3DContainer"]
    assert out["filteredByTargetType"] > 0 and out["truncated"] is False


def test_forward_max_edges_truncates_with_summary(api: QueryApi) -> None:
    out = api.get_asset_references("GameObject", "SampleTank", depth=2, max_edges=3)
    assert out["edgeCount"] == 3 and out["truncated"] is True
    assert sum(out["omittedByTargetType"].values()) > 0


def test_forward_unknown_asset(api: QueryApi) -> None:
    with pytest.raises(ServiceError) as err:
        api.get_asset_references("GameObject", "Nope")
    assert err.value.code == "ASSET_NOT_FOUND" and err.value.hint


def test_definition_inherit_chain(api: QueryApi) -> None:
    out = api.get_definition("WeaponTemplate", "sampletankgun")
    chain = out["inheritChain"]
    assert chain[0]["target"]["id"] == "BaseCannon" and chain[0]["resolution"] == "resolved"


@pytest.mark.parametrize("depth", [1, 2, 3])
@pytest.mark.parametrize("max_edges", [1, 2, 5, 200])
def test_forward_max_edges_is_exact_and_edges_never_repeat(api: QueryApi, depth: int, max_edges: int) -> None:
    """maxEdges counts every edge (inheritFrom ones too); one written reference is one edge."""
    for asset in ("SampleTank", "SampleScout"):
        out = api.get_asset_references("GameObject", asset, depth=depth, max_edges=max_edges)
        edges = out["edges"]
        assert len(edges) == out["edgeCount"] <= max_edges
        sites = [
            (
                e["source"]["file"],
                e["source"]["line"],
                e["source"]["character"],
                e["via"]["attribute"] or e["via"]["element"],
            )
            for e in edges
        ]
        assert len(sites) == len(set(sites)), "a written reference listed twice"
        unlimited = api.get_asset_references("GameObject", asset, depth=depth, max_edges=2000)
        assert out["truncated"] == (unlimited["edgeCount"] > max_edges)


def test_outside_paths_answer_the_same_whether_they_exist(api: QueryApi, tmp_path: Path) -> None:
    """No existence oracle: a path outside the project and its roots is never looked up."""
    real = tmp_path / "secret.xml"
    real.write_text("<x/>")
    answers = []
    for path in [
        str(real),
        str(tmp_path / "missing.xml"),
        "/etc/passwd",
        "/etc/nonexistent",
        "../../../../etc/passwd",
    ]:
        answer = api.is_file_active(path)
        answer.pop("index")
        assert answer["active"] is False and "exists" not in answer
        assert answer["error"].startswith("INCLUDE_OUTSIDE_ROOTS")
        answers.append({k: v.replace(path, "<path>") if isinstance(v, str) else v for k, v in answer.items()})
    assert all(a == answers[0] for a in answers)
    for source in [str(real), str(tmp_path / "missing.xml")]:
        resolved = api.resolve_include(source)
        assert resolved["resolved"] is None and "INCLUDE_OUTSIDE_ROOTS" in resolved["error"]
    inside = api.is_file_active("Data/Mod.xml")
    assert inside["active"] is True
    assert api.is_file_active("Data/NotThere.xml")["exists"] is False  # inside the project: told
