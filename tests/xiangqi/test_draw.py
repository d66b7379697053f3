"""Draw offers (提和): the person and the model offer and answer; no draw without the person's yes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from moddesk.kit.errors import ServiceError
from moddesk.kit.mcp import result_payload
from moddesk.xiangqi.game import GameService
from moddesk.xiangqi.rpc import parse_command
from moddesk.xiangqi.serving import XiangqiHttp
from moddesk.xiangqi.store import Settings


def settings(tmp_path: Path) -> Settings:
    return Settings(db_path=tmp_path / "games.db", think_time=0.2, hint_time=0.1, engine="builtin")


@pytest.fixture
def service(tmp_path: Path):  # type: ignore[no-untyped-def]
    svc = GameService(settings(tmp_path))
    yield svc
    svc.close()


def refused(call: Any) -> ServiceError:
    with pytest.raises(ServiceError) as caught:
        call()
    return caught.value


def test_person_offers_and_the_model_answers(service: GameService) -> None:
    service.new("hero", "r", "model")
    offered = service.draw("hero", "offer")
    assert (
        offered["drawOffer"] == {"by": "hero", "ply": 0} and offered["message"]["code"] == "draw.offered.hero"
    )
    declined = service.draw("opponent", "decline")
    assert declined["drawOffer"] is None and declined["message"]["code"] == "draw.declined"
    again = refused(lambda: service.draw("hero", "offer"))
    assert again.code == "DRAW_REFUSED"  # not again before the person's next move
    service.move("hero", "h2e2")
    assert service.draw("hero", "offer")["drawOffer"]["ply"] == 1
    agreed = service.draw("opponent", "accept")
    assert agreed["phase"] == "over" and agreed["status"]["state"] == "draw"
    assert agreed["status"]["reason"] == "DRAW_AGREED" and agreed["status"]["winner"] is None
    exported = service.export()
    assert exported["result"] == "1/2-1/2" and '[Result "1/2-1/2"]' in exported["pgn"]
    assert refused(lambda: service.move("opponent", "h9g7")).code == "GAME_OVER"
    # the person ended it: the model cannot reopen it, the person can
    assert refused(lambda: service.undo("opponent", 1)).code == "UNDO_REFUSED"
    assert service.undo("hero", 1)["phase"] == "playing"


def test_only_the_person_accepts_the_models_offer(service: GameService) -> None:
    service.new("hero", "b", "model")  # the model plays Red and moves first
    offered = service.draw("opponent", "offer")
    assert offered["drawOffer"]["by"] == "opponent" and offered["phase"] == "playing"
    # the model cannot accept its own offer, nor decline it into a draw
    assert refused(lambda: service.draw("opponent", "accept")).code == "DRAW_REFUSED"
    assert refused(lambda: service.draw("opponent", "decline")).code == "DRAW_REFUSED"
    # offering again changes nothing; the game goes on until the person answers
    assert service.draw("opponent", "offer")["drawOffer"]["by"] == "opponent"
    service.move("opponent", "h2e2")
    still = service.state()
    assert still["drawOffer"]["by"] == "opponent" and still["phase"] == "playing"
    agreed = service.draw("hero", "accept")
    assert agreed["status"]["reason"] == "DRAW_AGREED" and agreed["status"]["reasonZh"] == "双方同意和棋"


def test_an_offer_lapses_when_the_other_side_moves(service: GameService) -> None:
    service.new("hero", "r", "model")
    service.move("hero", "h2e2")
    assert service.draw("opponent", "offer")["drawOffer"]["by"] == "opponent"
    service.move("opponent", "h9g7")  # the offerer's own move keeps the offer
    assert service.state()["drawOffer"]["by"] == "opponent"
    moved = service.move("hero", "h0g2")  # the person plays on: declined by moving
    assert moved["drawOffer"] is None
    assert refused(lambda: service.draw("hero", "accept")).code == "DRAW_REFUSED"


def test_person_offering_into_the_models_offer_accepts_it(service: GameService) -> None:
    service.new("hero", "r", "model")
    service.draw("opponent", "offer")
    assert service.draw("hero", "offer")["status"]["reason"] == "DRAW_AGREED"


@pytest.mark.parametrize(
    ("fen", "agrees"),
    [
        # Black (the engine) has a lone king against a rook: it takes the draw
        ("4k4/9/9/9/9/9/9/9/4A4/R3K4 w - - 0 1", True),
        # Black is a rook up: it plays on
        ("r3k4/9/9/9/9/9/9/9/4A4/4K4 w - - 0 1", False),
    ],
)
def test_the_local_engine_answers_by_its_evaluation(service: GameService, fen: str, agrees: bool) -> None:
    service.new("hero", "r", "local", fen=fen)
    answered = service.draw("hero", "offer")
    assert answered["drawOffer"] is None
    assert (answered["status"]["reason"] == "DRAW_AGREED") is agrees
    assert answered["message"]["code"] == ("draw.agreed" if agrees else "draw.declined")


def test_command_words() -> None:
    assert parse_command("draw offer") == ("draw", {"action": "offer"})
    assert parse_command("/xiangqi 提和") == ("draw", {"action": "offer"})
    assert parse_command("draw 同意") == ("draw", {"action": "accept"})
    assert parse_command("draw 拒绝") == ("draw", {"action": "decline"})
    with pytest.raises(ServiceError):
        parse_command("draw maybe")


def test_draw_over_mcp_and_rpc(tmp_path: Path) -> None:
    service = GameService(settings(tmp_path))
    server = XiangqiHttp(service, 0)  # the model on /mcp with its token, the person on the RPC

    async def run(url: str) -> None:
        async with server.client() as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "xiangqi_draw" in tools
            new = await client.call_tool("xiangqi_new", {"side": "r"})
            session = result_payload(new)["sessionId"]
            offered = await client.call_tool("xiangqi_draw", {"action": "offer", "sessionId": session})
            text = offered.content[0].text  # type: ignore[union-attr]
            assert "draw offer: by you (the model) at ply 0, open: only the person can accept it" in text
            own = await client.call_tool("xiangqi_draw", {"action": "accept", "sessionId": session})
            assert own.is_error and result_payload(own)["error"] == "DRAW_REFUSED"
            # the agent's token cannot accept for the person; the person's key can
            agent = {"Authorization": f"Bearer {server.token}"}
            async with httpx.AsyncClient(timeout=30) as stranger:
                refused = await stranger.post(
                    f"{url}/xiangqi-mate/draw", json={"sessionId": session, "action": "accept"}, headers=agent
                )
                assert refused.status_code == 403 and refused.json()["error"]["code"] == "PERSON_ONLY"
            async with httpx.AsyncClient(timeout=30, headers=server.person_headers()) as http:
                answer = await http.post(
                    f"{url}/xiangqi-mate/draw", json={"sessionId": session, "action": "accept"}
                )
                body = answer.json()
                assert body["ok"] and body["value"]["status"]["reason"] == "DRAW_AGREED"
                bad = await http.post(f"{url}/xiangqi-mate/draw", json={"sessionId": session, "action": 3})
                assert bad.json()["error"]["code"] == "INVALID_ARGUMENT"
            board = await client.call_tool("xiangqi_board", {"sessionId": session})
            said = board.content[0].text  # type: ignore[union-attr]
            assert (
                "status: draw, winner none, DRAW_AGREED: 双方同意和棋" in said
                and "next: xiangqi_review" in said
            )

    try:
        with server:
            anyio.run(run, server.url)
    finally:
        service.close()


def test_the_local_engine_does_not_take_a_draw_in_the_opening(service: GameService) -> None:
    service.new("hero", "r", "local")  # the start position: Black is a few centipawns behind, not lost
    answered = service.draw("hero", "offer")
    assert answered["phase"] == "playing" and answered["message"]["code"] == "draw.declined"
