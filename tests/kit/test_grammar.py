"""The sentence grammar (attnlab.data.grammar): determinism, exact inference, the optimum line."""
from __future__ import annotations

import math
import time
from collections import Counter

import pytest
import torch

from attnlab.data.grammar import BOS, EOS, GRAMMAR, MAX_WORDS, PAD, TOPICS, Sentences, sample

G = GRAMMAR


def _batch(sentences: list[str], topic: int = 0) -> Sentences:
    """Sentences written as text -> a batch (topics set to `topic`)."""
    T = max(len(s.split()) for s in sentences)
    ids = torch.full((len(sentences), T + 2), PAD, dtype=torch.long)
    for n, s in enumerate(sentences):
        words = [G.word_id[w] for w in s.split()]
        ids[n, 0], ids[n, 1:len(words) + 1], ids[n, len(words) + 1] = BOS, torch.tensor(words), EOS
    lengths = torch.tensor([len(s.split()) for s in sentences])
    return Sentences(ids, lengths, torch.full((len(sentences),), topic))


def test_sampling_is_deterministic_and_well_formed() -> None:
    a, b, c = sample(500, 7), sample(500, 7), sample(500, 8)
    assert torch.equal(a.ids, b.ids) and torch.equal(a.topics, b.topics)
    assert not torch.equal(a.ids[:, :5], c.ids[:, :5])
    n = torch.arange(len(a))
    assert (a.ids[:, 0] == BOS).all() and (a.ids[n, a.lengths + 1] == EOS).all()
    assert 3 <= int(a.lengths.min()) and int(a.lengths.max()) <= MAX_WORDS
    words = a.words()
    live = torch.arange(words.shape[1])[None, :] < a.lengths[:, None]
    assert (words[live] > 3).all() and (words[~live] == PAD).all()
    assert set(a.topics.tolist()) == set(range(len(TOPICS)))
    sub = a[10:20]
    assert len(sub) == 10 and sub.ids.shape[1] == int(sub.lengths.max()) + 2


def test_sampling_thousands_is_fast() -> None:
    sample(100, 0)
    start = time.perf_counter()
    sample(5000, 1)
    assert time.perf_counter() - start < 1.0


def test_sampler_matches_the_model_probabilities() -> None:
    batch = sample(20000, 3)
    counts = Counter(tuple(batch.ids[n, :int(batch.lengths[n]) + 2].tolist()) for n in range(len(batch)))
    for seq, k in counts.most_common(3):
        p = math.exp(float(G.log_prob(_batch([" ".join(G.vocab[i] for i in seq[1:-1])]))[0]))
        se = math.sqrt(p * (1 - p) / len(batch))
        assert abs(k / len(batch) - p) < 4 * se + 1e-4, (seq, k / len(batch), p)


def test_blank_posteriors_are_distributions() -> None:
    batch = sample(300, 4)
    post = G.blank_posteriors(batch)
    live = torch.arange(post.shape[1])[None, :] < batch.lengths[:, None]
    assert torch.allclose(post[live].sum(-1), torch.ones(int(live.sum()), dtype=torch.float64))
    assert (post >= 0).all() and (post[~live] == 0).all()
    true_p = post.gather(-1, batch.words()[..., None]).squeeze(-1)
    assert (true_p[live] > 0).all()  # the word that was generated is always possible


@pytest.mark.parametrize("text", ["the dog runs", "some cars wait", "a bird near the cats waits"])
def test_forward_backward_matches_brute_force_enumeration(text: str) -> None:
    words = [G.word_id[w] for w in text.split()]
    batch = _batch([text])
    assert math.isclose(float(G.log_prob(batch)[0]), math.log(G.brute_force_prob(words)), rel_tol=1e-9)
    if len(words) > 3:
        return  # the blank check below enumerates |V| x paths: keep it to the short ones
    post = G.blank_posteriors(batch)[0]
    for t in range(len(words)):
        joint = torch.tensor([G.brute_force_prob(words[:t] + [v] + words[t + 1:]) for v in range(len(G.vocab))],
                             dtype=torch.float64)
        assert torch.allclose(post[t], joint / joint.sum(), atol=1e-12)


def test_topic_posteriors_match_brute_force() -> None:
    text = "the dog carries a truck"
    words = [G.word_id[w] for w in text.split()]
    per_topic = [G.brute_force_prob(words, topic=c) for c in range(len(TOPICS))]
    expected = torch.tensor(per_topic, dtype=torch.float64) / sum(per_topic)
    assert torch.allclose(G.topic_posteriors(_batch([text]))[0], expected, atol=1e-12)


def test_agreement_crosses_the_prepositional_phrase() -> None:
    post = G.blank_posteriors(_batch(["a dog near the cats runs quickly", "these dogs near a cat run quickly"]))
    singular = [G.word_id[w] for w in ("sleeps", "runs", "stops", "waits", "sees", "follows", "carries")]
    plural = [G.word_id[w] for w in ("sleep", "run", "stop", "wait", "see", "follow", "carry")]
    assert math.isclose(float(post[0, 5, singular].sum()), 1.0, rel_tol=1e-12)  # verb of "a dog"
    assert float(post[0, 5, plural].sum()) == 0.0
    assert math.isclose(float(post[1, 5, plural].sum()), 1.0, rel_tol=1e-12)  # verb of "these dogs"


def test_optimum_cross_entropy_is_sane() -> None:
    a, b = sample(4000, 5), sample(4000, 6)
    opt_a, opt_b = G.blank_optimum(a), G.blank_optimum(b)
    assert 0.5 < opt_a < math.log(len(G.vocab))
    assert abs(opt_a - opt_b) < 0.06  # the same expectation from two samples
    # Below what a model that ignores the context can do: the entropy of the word frequencies.
    w = a.words()[a.words() != PAD]
    freq = torch.bincount(w, minlength=len(G.vocab)).double() / len(w)
    unigram = float(-(freq[freq > 0] * freq[freq > 0].log()).sum())
    assert opt_a < unigram - 1.0
    # Calibrated: averaged over blanks, P(w_t = v | rest) is the frequency of v at a blank.
    post = G.blank_posteriors(a)
    live = torch.arange(post.shape[1])[None, :] < a.lengths[:, None]
    assert (post[live].mean(0) - freq).abs().max() < 0.01
    # The optimum is attained: the exact posteriors score exactly blank_optimum.
    nll = G.blank_nll(a)
    assert math.isclose(float((nll.sum(1) / a.lengths).mean()), opt_a, rel_tol=1e-12)


def test_bayes_accuracy_matches_the_bayes_classifier() -> None:
    batch = sample(4000, 9)
    post = G.topic_posteriors(batch)
    assert torch.allclose(post.sum(1), torch.ones(len(batch), dtype=torch.float64))
    empirical = float((post.argmax(1) == batch.topics).double().mean())
    expected = G.bayes_accuracy(batch)
    assert abs(empirical - expected) < 0.02
    assert 0.8 < expected < 0.98  # hard enough that a classifier must read the whole sentence
