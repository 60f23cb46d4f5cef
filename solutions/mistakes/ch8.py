"""Chapter 8: wrong implementations, each losing exactly its cells (edits of the chapter's solution cells)."""
from solutions.mistakes import Assign, Patch, Wrong

# block_step that reruns the causal block on every position so far (kept in a list of the inputs it was given):
# right values along one sequence, work per step growing with t J^2.
RECOMPUTE = '''HISTORY = []


def block_step(m, Key, Value, params, H, K):
    """Reruns the whole prefix: the inputs so far are kept in HISTORY."""
    if Key.shape[1] == 0:
        HISTORY.clear()
    HISTORY.append(m)
    M = torch.stack(HISTORY)
    I = Value.shape[-1]
    T = M.shape[0]
    P = F.linear(layer_norm(M, params["gain1"], params["shift1"]), params["W"])
    _, Key, Value = (x.reshape(T, H, -1).transpose(0, 1) for x in P.split([H * K, H * K, H * I], dim=1))
    return causal_block(M, params, H, K)[-1], Key, Value
'''

# tiled_attention that computes every score at once and only then reads them tile by tile: right values, T x T memory.
WHOLE_SCORES = '''def tiled_attention(Query, Key, Value, tile, causal=False):
    """The whole score tensor first: s[H, T, T]."""
    H, T, K = Query.shape
    s = torch.einsum("htk,hTk->htT", Query, Key) / math.sqrt(K)
    if causal:
        s = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=s.device).triu(1), -math.inf)
    return torch.einsum("htT,hTi->hti", torch.softmax(s, dim=-1), Value)
'''

WRONG = [
    Assign("nocache_cost", "NOCACHE_WORK", "L*(T^2*J + T*J^2)", ("test_nocache_work",),
           "one pass over T positions counted, as in training: the reruns of every prefix forgotten"),
    Assign("nocache_cost", "NOCACHE_WORK", "L*T^3*J", ("test_nocache_work",),
           "the projections' and the feed-forward layer's J^2 per position forgotten"),
    Assign("nocache_cost", "NOCACHE_TIME", "L*(log(T) + log(J))", ("test_nocache_time",),
           "the depth of one parallel pass: the steps are sequential"),
    Assign("nocache_cost", "NOCACHE_TIME", "L*T^2", ("test_nocache_time",),
           "the softmax's sum counted serially and the steps too"),
    Patch("block_step", "query.reshape(H, K), Key) / math.sqrt(K)", "query.reshape(H, K), Key)",
          ("test_block_step",), "scores not scaled by 1/sqrt(K)"),
    Patch("block_step", "Key = torch.cat([Key, key.reshape(H, 1, K)], dim=1)\n"
          "    Value = torch.cat([Value, value.reshape(H, 1, I)], dim=1)\n    # the new position's scores\n    s =",
          "# the new position's scores\n    s =", ("test_block_step",),
          "the new position's own key and value left out of the cache (it cannot read itself)"),
    Wrong("block_step", RECOMPUTE, ("test_block_step",),
          "the whole prefix rerun at every step: right values, work per step growing with t J^2"),
    Assign("cache_cost", "CACHE_WORK", "L*(T^3*J + T^2*J^2)", ("test_cache_work",),
           "the work without the cache"),
    Assign("cache_cost", "CACHE_WORK", "L*T*J^2", ("test_cache_work",), "attention to the cached keys forgotten"),
    Assign("cache_cost", "CACHE_TIME", "L*(log(T) + log(J))", ("test_cache_time",),
           "the cache taken to make the steps parallel"),
    Assign("cache_cost", "CACHE_MEMORY", "L*T^2*J", ("test_cache_memory",), "a key per pair of positions"),
    Assign("cache_cost", "CACHE_MEMORY", "T*J", ("test_cache_memory",), "one block's cache"),
    Patch("grouped_attention", "repeat_interleave(group, dim=0), Value.repeat_interleave(group, dim=0)",
          "repeat(group, 1, 1), Value.repeat(group, 1, 1)  # head h reads h % Hkv", ("test_grouped_attention",),
          "query head h paired with key/value head h % Hkv (the groups interleaved)"),
    Assign("grouped_memory", "GROUPED_MEMORY", "L*T*H*K", ("test_grouped_memory",),
           "the cache of every query head: the sharing forgotten"),
    Assign("grouped_memory", "GROUPED_MEMORY", "L*T*K", ("test_grouped_memory",), "one key/value head only"),
    Patch("online_softmax", "Znew[t] = exp(mu[t] - munew[t]) * Z[t] +", "Znew[t] = Z[t] +", ("test_online_softmax",),
          "the old sum not rescaled to the new maximum"),
    Patch("tiled_attention", "t[:, None] < t[None, keys]", "t[:, None] <= t[None, keys]", ("test_tiled_attention",),
          "the mask hides the query's own position too: position 0 reads no key (0 / 0)"),
    Patch("tiled_attention", "p = torch.exp(s - safe[..., None])", "p = torch.exp(s) * torch.exp(-safe[..., None])",
          ("test_tiled_attention",), "the maximum subtracted after the exponential: exp(1e4) overflows"),
    Wrong("tiled_attention", WHOLE_SCORES, ("test_tiled_attention",),
          "every score stored at once (T x T): right values, the largest tensor H T^2"),
    Assign("tiled_memory", "TILED_MEMORY", "H*T^2", ("test_tiled_memory",), "the whole score tensor"),
    Assign("tiled_memory", "TILED_MEMORY", "H*T*Ttile", ("test_tiled_memory",), "the running output forgotten"),
]
