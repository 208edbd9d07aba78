"""The targets bench figures are judged against (DESIGN.md's measured targets), and the verdict on each
figure a run produced."""

from __future__ import annotations

from typing import Any

TARGETS = {
    "total_minus_embed_p50_ms": 15.0,
    "total_minus_embed_p95_ms": 40.0,
    "warm_rerun_p50_ms": 5.0,
    "mmr_250_to_10_p50_ms": 5.0,
    "parent_10_hits_p50_ms": 5.0,
    "cancel_p50_ms": 50.0,
    "throughput_ratio": 0.85,
    "phase_one_s": 15.0,
    "no_change_reindex_s": 3.0,
    "cli_help_s": 0.2,
    "cli_search_s": 0.4,
    "scale_total_minus_embed_p50_ms": 50.0,
    "rerank_p50_ms": 1500.0,
    "rerank_cached_p50_ms": 5.0,
    "readers_failed": 0,
    "serve_overhead_p50_ms": 5.0,
    "serve_soak_growth": 1.5,
    "watch_fts_found_p50_ms": 500.0,
    "watch_fts_found_p95_ms": 1000.0,
    "watch_vector_minus_embed_p95_ms": 200.0,
    "watch_missed": 0,
    "watch_idle_cpu_percent": 1.0,
    "watch_burst_batches": 3,
    "watch_burst_unindexed": 0,
}


def verdicts(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each measured target: value, target, met."""
    out: dict[str, dict[str, Any]] = {}

    def put(name: str, value: float | None) -> None:
        if value is None:
            return
        target = TARGETS[name]
        met = value >= target if name == "throughput_ratio" else value <= target
        out[name] = {"value": value, "target": target, "met": met}

    s = result.get("search")
    if s:
        put("total_minus_embed_p50_ms", s["total_minus_embed_ms"]["p50"])
        put("total_minus_embed_p95_ms", s["total_minus_embed_ms"]["p95"])
        put("warm_rerun_p50_ms", s["warm_rerun_ms"]["p50"])
        put("mmr_250_to_10_p50_ms", s["mmr_250_to_10_ms"]["p50"])
        put("parent_10_hits_p50_ms", s["parent_on"]["parent_stage_ms"]["p50"])
        put("cancel_p50_ms", s["cancellation"]["p50"])
    i = result.get("index")
    if i:
        put("throughput_ratio", i["phase_two"]["ratio"])
        put("phase_one_s", i["phase_one"]["seconds"])
        if i.get("no_change_reindex"):
            put("no_change_reindex_s", i["no_change_reindex"]["seconds"])
    if result.get("cli_help"):
        put("cli_help_s", result["cli_help"]["seconds"])
    if result.get("cli_search"):
        put("cli_search_s", result["cli_search"]["seconds"])
    sc = result.get("scale")
    if sc:
        put("scale_total_minus_embed_p50_ms", sc["search"]["total_minus_embed_ms"]["p50"])
    rr = result.get("rerank")
    if rr and rr["per_query_ms"]["n"]:
        put("rerank_p50_ms", rr["per_query_ms"]["p50"])
        put("rerank_cached_p50_ms", rr["cached_rerank_ms"]["p50"])
    sv = result.get("serve")
    if sv:
        put("serve_overhead_p50_ms", sv["overhead_p50_ms"])
    sk = result.get("soak")
    if sk and sk["growth"] is not None:
        put("serve_soak_growth", sk["growth"])
    rd = result.get("readers")
    if rd:
        put("readers_failed", sum(rd[k]["failed"] for k in ("idle", "other_index_busy", "indexing")))
    w = result.get("watch")
    if w:
        sv = w["saves"]
        put("watch_fts_found_p50_ms", sv["fts_found_ms"]["p50"])
        put("watch_fts_found_p95_ms", sv["fts_found_ms"]["p95"])
        put("watch_vector_minus_embed_p95_ms", sv["vector_minus_embed_ms"]["p95"])
        put("watch_missed", sv["missed"]["fts"] + sv["missed"]["vector"])
        put("watch_idle_cpu_percent", w["idle"]["cpu_percent"])
        if w["burst"].get("files"):
            put("watch_burst_batches", w["burst"]["batches"])
            put("watch_burst_unindexed", w["burst"]["unindexed"])
    return out
