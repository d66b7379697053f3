"""The generator's text in each region's own script (``generate --region tw|kr|jp``).

The vocabulary is written once in simplified Chinese (the ``cn`` region); the other regions get it
through per-character maps: ``tw`` the traditional forms (Big5/CP950 holds no simplified forms),
``jp`` the Japanese kanji forms (CP932), ``kr`` the Sino-Korean readings in Hangul (CP949 holds
hanja, but Korean text is written in Hangul — 烈火 → 열화, 守护 → 수호). ``utf8`` keeps the Chinese.
Every mapped text encodes in its region's code page (a test checks each character).
"""

from __future__ import annotations

_PAIRS = {
    "tw": "几幾书書传傳伤傷兑兌军軍冲衝冻凍击擊剂劑动動却卻发發处處备備头頭审審对對尽盡属屬带帶应應强強归歸彻徹径徑态態护護换換敌敵斩斬时時晓曉残殘状狀礼禮约約级級终終经經苍蒼荣榮药藥装裝该該语語说說赋賦轻輕辅輔过過进進银銀链鏈镯鐲门門间間项項饰飾驭馭驾駕验驗鸣鳴龙龍",
    "jp": "几幾书書传伝伤傷兑兌军軍冻凍击撃剂剤动動发発圣聖处処备備复復头頭审審对対带帯应応强強归帰彻徹态態护護换換敌敵斩斬时時晓暁步歩约約级級终終经経苍蒼荣栄药薬该該语語说説赋賦轻軽辅輔过過进進银銀链鎖镯環门門间間项項饰飾驭馭驾駕验験鸣鳴龙竜",
    "kr": (
        "一일上상下하中중之지书서予여人인以이传전伤상低저体체何하使사光광兑태入입军군冥명冰빙冲충冷냉冻동几기击격刃인判판券권刺자剂제前전力력动동助조勇용化화升승却각发발只지可가后후向향咆포品품哮효器기圣성地지士사处처备비复복天천头두它타守수审심害해寒한对대尽진属속山산崖애崩붕布포带대幕막并병幽유应응强강归귀影영彻철径경心심态태性성恢회悲비成성戒계所소手수才재技기护호指지换환攻공敌적料료斩참方방时시星성是시"
        "晓효智지暗암暴폭最최有유板판正정步보武무残잔法법海해火화炎염烈열状상率율理리用용甲갑界계的적皮피盒합真진石석破파碧벽礼례秒초穹궁约약级급终종经경耀요者자能능腰요自자苍창荣영药약落락衣의裂렬装장誓서该해语어说설赋부赤적超초跳도身신轻경辅보辰진过과进진透투造조配배重중量량银은链련镯탁门문间간雷뇌霆정霜상霸패鞋혜项항饰식驭어驾가验험魔마鸣명龙룡"
    ),
}

_MAPS: dict[str, dict[int, str]] = {
    region: {ord(pairs[i]): pairs[i + 1] for i in range(0, len(pairs), 2)} for region, pairs in _PAIRS.items()
}


def localize(text: str, region: str) -> str:
    """``text`` (the generator's simplified Chinese) in ``region``'s script; unchanged for cn/utf8."""
    table = _MAPS.get(region)
    if table is None or text.isascii():
        return text
    return text.translate(table)
