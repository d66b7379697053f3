"""Annotation docs speed: explain per file, search latency, reference resolution through a big list.

Peers measured in the same run:
* explain vs ``moddesk.pvf.docparse.build_document`` of the same texts (the parse floor explain
  cannot beat: the ratio is the cost of matching rules and building results);
* search vs a bare substring scan over the same rule texts (the bound for a keyword filter);
* a cached reference lookup vs the first one that parses the ``.lst`` (the list-parse cost).

    .venv/bin/python benchmarks/pvf_annotations.py            # 3,000 files, 10,000 extra rules, 200,000-entry list
    .venv/bin/python benchmarks/pvf_annotations.py --quick    # 500 files, 1,000 rules, 20,000 entries
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable

from moddesk.pvf.annotations import AnnotationDocs, MappingLookup, parse_document
from moddesk.pvf.docparse import build_document

JOBS = ["[swordman]", "[fighter]", "[gunner]", "[mage]", "[priest]", "[at gunner]"]


def equipment_text(rng: random.Random, i: int) -> str:
    job = rng.choice(JOBS)
    return (
        "#PVF_File\n\n"
        f"[name]\n\t`装备 {i} 🗡`\n\n[name2]\n\t`Item {i}`\n\n"
        f"[basic explain]\n\t`攻击时有{rng.randint(1, 9)}%%的几率\n使敌人眩晕`\n\n"
        f"[grade]\n\t{rng.randint(1, 90)}\n\n[rarity]\n\t{rng.randint(0, 5)}\n\n"
        f"[usable job]\n\t`{job}`\n[/usable job]\n\n[attach type]\n\t`[trade]`\n\n"
        f"[minimum level]\n\t{rng.randint(1, 85)}\n\n[price]\n\t{rng.randint(0, 10**6)}\n\n"
        f"[value]\n\t{rng.randint(0, 10**5)}\n\n[equipment physical attack]\n\t{rng.randint(1, 900)}\t{rng.randint(1, 900)}\n\n"
        f"[skill levelup]\n\t`{job}`\t{rng.randint(1, 200)}\t1\n\t`{job}`\t{rng.randint(1, 200)}\t2\n[/skill levelup]\n\n"
        f"[set item]\n\t{i}\t{i + 1}\t{i + 2}\n[/set item]\n\n"
        f"[icon]\n\t`Item/weapon.img`\t{rng.randint(0, 300)}\n\n[equipment type]\n\t`[weapon]`\t20\n"
    )


def skill_text(rng: random.Random) -> str:
    rows = "\n".join("\t\t" + "\t".join(str(rng.randint(0, 999)) for _ in range(5)) for _ in range(70))
    return (
        "#PVF_File\n\n[name]\n\t`技能`\n\n[type]\n\t`[active]`\n\n"
        "[command]\n\t{6=`(RIGHT)`}\n\t{8=`,`}\n\t{6=`(UP)`}\n\t{8=`,`}\n\t{6=`(SKILL)`}\n[/command]\n\n"
        f"[dungeon]\n\t[cool time]\n\t\t5000\t5000\n\t[level info]\n\t\t5\n{rows}\n\t[/level info]\n[/dungeon]\n"
    )


def timed(fn: Callable[[], object], runs: int = 5) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def extra_rules(count: int) -> dict[str, object]:
    rules = []
    for i in range(count):
        rules.append(
            {
                "id": f"bench.rule.{i}",
                "description": f"benchmark rule number {i} about section s{i % 97}",
                "match": {"extensions": [".equ"] if i % 2 else [".stk"]},
                "target": {"kind": "token", "section": f"s{i % 97}", "index": 0},
                "annotation": {
                    "title": f"Bench {i}",
                    "type": "enum",
                    "values": {str(k): f"v{k}" for k in range(5)},
                },
            }
        )
    return {"rules": rules}


def main() -> None:
    quick = "--quick" in sys.argv
    files = 500 if quick else 3_000
    rule_count = 1_000 if quick else 10_000
    list_size = 20_000 if quick else 200_000
    rng = random.Random(7)
    texts = [(f"equipment/character/x/{i}.equ", equipment_text(rng, i)) for i in range(files)]
    texts += [(f"skill/x/{i}.skl", skill_text(rng)) for i in range(files // 10)]
    total_chars = sum(len(t) for _, t in texts)
    archive = MappingLookup(dict(texts))
    docs = AnnotationDocs()

    def explain_all() -> int:
        count = 0
        for path, text in texts:
            count += len(
                docs.explain(
                    path, text, workspace_id="b", revision=1, pvf_version="classic", lookup=archive, limit=100
                )["annotations"]
            )
        return count

    def parse_all() -> None:
        for _, text in texts:
            build_document(text)

    annotations = explain_all()
    explain_s = timed(explain_all, 2)
    parse_s = timed(parse_all, 2)
    print(
        f"explain: {len(texts):,} files ({total_chars / 1e6:.1f} M chars, {annotations:,} annotations) in {explain_s:.2f} s "
        f"= {len(texts) / explain_s:,.0f} files/s, {total_chars / explain_s / 1e6:.2f} M chars/s"
    )
    print(f"build_document of the same texts (peer): {parse_s:.2f} s = {len(texts) / parse_s:,.0f} files/s")
    print(f"ratio explain / parse: {explain_s / parse_s:.2f}x")

    big = AnnotationDocs([parse_document(extra_rules(rule_count), "bench.json")])
    haystacks = [e.search_text for e in big.snapshot.entries]
    queries = ["price", "section s42", "稀有度", "bench 77", "enum v3"]

    def search_all() -> None:
        for q in queries:
            big.clear_caches()  # measure ranking, not the next-page cache
            big.search(query=q, pvf_version="all", limit=20)

    def scan_all() -> None:
        for q in queries:
            terms = q.casefold().split()
            [h for h in haystacks if all(t in h for t in terms)]

    search_s = timed(search_all) / len(queries)
    scan_s = timed(scan_all) / len(queries)
    print(
        f"search over {len(big.snapshot.entries):,} definitions: {search_s * 1000:.1f} ms/query; "
        f"bare substring scan (bound): {scan_s * 1000:.1f} ms/query; ratio {search_s / scan_s:.1f}x"
    )
    big.clear_caches()
    started = time.perf_counter()
    page = big.search(pvf_version="all", limit=100)
    first_page = time.perf_counter() - started
    started = time.perf_counter()
    pages = 1
    while page["nextCursor"] and pages < 20:
        page = big.search(pvf_version="all", limit=100, cursor=page["nextCursor"])
        pages += 1
    next_page = (time.perf_counter() - started) / (pages - 1)
    print(
        f"empty-filter paging, 100 per page: first page {first_page * 1000:.1f} ms (ranks every definition), "
        f"next pages {next_page * 1000:.1f} ms (ranking re-used); ratio {first_page / next_page:.0f}x"
    )

    lst = "#PVF_File\n\n" + "".join(f"{i}\n`character/x/{i}.equ`\n" for i in range(list_size))
    ref_archive = MappingLookup({"equipment/equipment.lst": lst, **dict(texts)})
    probe_path, probe_text = texts[0]
    first_docs = AnnotationDocs()
    started = time.perf_counter()
    first_docs.explain(
        probe_path, probe_text, workspace_id="b", revision=1, pvf_version="classic", lookup=ref_archive
    )
    cold = time.perf_counter() - started
    warm = timed(
        lambda: first_docs.explain(
            probe_path, probe_text, workspace_id="b", revision=1, pvf_version="classic", lookup=ref_archive
        ),
        5,
    )
    print(
        f"explain with references through a {list_size:,}-entry list: first {cold * 1000:.0f} ms (parses the list), "
        f"then {warm * 1000:.1f} ms (cached); ratio {cold / warm:.0f}x"
    )


if __name__ == "__main__":
    main()
