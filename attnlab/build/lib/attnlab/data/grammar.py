"""Sentences from a small probabilistic grammar, with exact posteriors.

The grammar is a probabilistic finite-state automaton (an HMM whose states emit words):
a sentence picks a topic (animals, vehicles, people), a subject number (singular or
plural), then walks through the states

    determiner  [adjective [adjective]]  noun
    [preposition determiner [adjective] noun]           (a prepositional phrase)
    verb  ( [adverb]  |  determiner [adjective] noun )  (intransitive | transitive)

The verb agrees in number with the subject noun, across the prepositional phrase whose
own noun has an independent number ("the dog near the cats runs"). Every state emits a
word from a topic-dependent distribution, so each word is weak evidence of the topic.
A sentence has 3 to 12 words.

Since the state space is small, everything a blank language model or a sentence
classifier could hope to learn is computable exactly by forward-backward:

* `blank_posteriors`: P(w_t = v | all other words), hence `blank_optimum`, the
  Bayes-optimal blank cross-entropy E_{sentence, t uniform} [-ln P(w_t | rest)];
* `topic_posteriors`: P(topic | sentence), hence `bayes_accuracy`, the best accuracy
  any classifier of the topic can reach.

Sampling is vectorised over sentences: thousands take milliseconds, deterministically
from a seed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch

PAD, BOS, EOS, MASK = 0, 1, 2, 3
SPECIALS = ("<pad>", "<bos>", "<eos>", "<mask>")
TOPICS = ("animals", "vehicles", "people")
MAX_WORDS = 12

DETERMINERS = {"sg": {"the": 0.5, "a": 0.3, "this": 0.2}, "pl": {"the": 0.5, "these": 0.3, "some": 0.2}}
ADJECTIVES = ("big", "small", "red", "tall", "quiet", "happy")
NOUNS = {  # topic -> (singular, plural) pairs
    "animals": (("dog", "dogs"), ("cat", "cats"), ("bird", "birds")),
    "vehicles": (("car", "cars"), ("truck", "trucks"), ("train", "trains")),
    "people": (("child", "children"), ("farmer", "farmers"), ("teacher", "teachers")),
}
INTRANSITIVE = (("sleeps", "sleep"), ("runs", "run"), ("stops", "stop"), ("waits", "wait"))
TRANSITIVE = (("sees", "see"), ("follows", "follow"), ("carries", "carry"))
PREPOSITIONS = {"near": 0.4, "behind": 0.3, "with": 0.3}
ADVERBS = {"quickly": 0.5, "slowly": 0.5}
# What each topic favours (weight 1; everything else in the word class has weight RHO).
FAVOURED = {
    "animals": {"small", "quiet", "sleeps", "runs", "follows", "sees"},
    "vehicles": {"big", "red", "stops", "runs", "carries"},
    "people": {"tall", "happy", "waits", "sleeps", "sees", "carries"},
}
RHO = 0.1  # weight of an unfavoured word: the topic shows only through several words
NUMBERS = ("sg", "pl")


def _vocabulary() -> tuple[str, ...]:
    words = list(SPECIALS)
    for w in [*DETERMINERS["sg"], *DETERMINERS["pl"], *ADJECTIVES,
              *(w for pairs in NOUNS.values() for pair in pairs for w in pair),
              *(w for pair in INTRANSITIVE + TRANSITIVE for w in pair), *PREPOSITIONS, *ADVERBS]:
        if w not in words:
            words.append(w)
    return tuple(words)


@dataclass(frozen=True)
class Sentences:
    """A batch of sentences: ids[N, 2+T_max] = <bos> w_1 .. w_T <eos> <pad> ..., T = lengths[n]."""

    ids: torch.Tensor  # [N, 2 + T_max] int64
    lengths: torch.Tensor  # [N] int64, words per sentence (without <bos>, <eos>)
    topics: torch.Tensor  # [N] int64, index into TOPICS

    def __len__(self) -> int:
        return self.ids.shape[0]

    def __getitem__(self, index: slice | torch.Tensor) -> Sentences:
        """A sub-batch, trimmed to its own longest sentence."""
        lengths = self.lengths[index]
        width = 2 + int(lengths.max()) if len(lengths) else 2
        return Sentences(self.ids[index][:, :width], lengths, self.topics[index])

    def words(self, width: int | None = None) -> torch.Tensor:
        """[N, width] the words alone (no <bos>/<eos>), right-padded with PAD; width >= T_max."""
        w = self.ids[:, 1:-1].clone()
        w[w == EOS] = PAD
        if width is not None:
            if width < w.shape[1] and (w[:, width:] != PAD).any():
                raise ValueError(f"width {width} is shorter than the longest sentence ({int(self.lengths.max())} words)")
            w = torch.nn.functional.pad(w, (0, max(0, width - w.shape[1])), value=PAD)[:, :width]
        return w


class Grammar:
    """The probabilistic finite-state grammar: states emit words, transitions are Markov."""

    def __init__(self) -> None:
        self.vocab: tuple[str, ...] = _vocabulary()
        self.word_id = {w: i for i, w in enumerate(self.vocab)}
        states: list[tuple[str, str]] = []  # (topic, syntactic state name)
        index: dict[tuple[str, str], int] = {}
        emissions: dict[int, dict[str, float]] = {}
        edges: list[tuple[int, int | None, float]] = []  # (from, to or None = end, prob)

        def state(topic: str, name: str, emit: dict[str, float]) -> int:
            index[(topic, name)] = len(states)
            states.append((topic, name))
            emissions[len(states) - 1] = emit
            return len(states) - 1

        def tilt(topic: str, words: list[str]) -> dict[str, float]:
            return {w: 1.0 if w in FAVOURED[topic] else RHO for w in words}

        start: list[tuple[int, float]] = []
        for c in TOPICS:
            adj = tilt(c, list(ADJECTIVES))
            def nouns(n: str, c: str = c) -> dict[str, float]:
                k = NUMBERS.index(n)
                return {pair[k]: (1.0 if topic == c else RHO) for topic in TOPICS for pair in NOUNS[topic]}
            def verbs(pairs: tuple[tuple[str, str], ...], n: str, c: str = c) -> dict[str, float]:
                # a verb's two forms share its topic weight (FAVOURED names the singular form)
                return {p[NUMBERS.index(n)]: 1.0 if p[0] in FAVOURED[c] else RHO for p in pairs}
            s = {}
            for n in NUMBERS:  # subject noun phrase, numbered n
                s["det", n] = state(c, f"subj_det_{n}", DETERMINERS[n])
                s["adj1", n] = state(c, f"subj_adj1_{n}", adj)
                s["adj2", n] = state(c, f"subj_adj2_{n}", adj)
                s["noun", n] = state(c, f"subj_noun_{n}", nouns(n))
                s["prep", n] = state(c, f"pp_prep_{n}", PREPOSITIONS)
                for m in NUMBERS:  # the prepositional phrase's own number m, remembering n
                    s["pdet", n, m] = state(c, f"pp_det_{n}_{m}", DETERMINERS[m])
                    s["padj", n, m] = state(c, f"pp_adj_{n}_{m}", adj)
                    s["pnoun", n, m] = state(c, f"pp_noun_{n}_{m}", nouns(m))
                s["vi", n] = state(c, f"verb_intr_{n}", verbs(INTRANSITIVE, n))
                s["vt", n] = state(c, f"verb_tr_{n}", verbs(TRANSITIVE, n))
            s["adv"] = state(c, "adverb", ADVERBS)
            for m in NUMBERS:  # object noun phrase
                s["odet", m] = state(c, f"obj_det_{m}", DETERMINERS[m])
                s["oadj", m] = state(c, f"obj_adj_{m}", adj)
                s["onoun", m] = state(c, f"obj_noun_{m}", nouns(m))
            for n in NUMBERS:
                start.append((s["det", n], 0.5 / len(TOPICS)))
                edges += [(s["det", n], s["adj1", n], 0.4), (s["det", n], s["noun", n], 0.6),
                          (s["adj1", n], s["adj2", n], 0.25), (s["adj1", n], s["noun", n], 0.75),
                          (s["adj2", n], s["noun", n], 1.0),
                          (s["noun", n], s["prep", n], 0.35), (s["noun", n], s["vi", n], 0.35),
                          (s["noun", n], s["vt", n], 0.3),
                          (s["vi", n], s["adv"], 0.35), (s["vi", n], None, 0.65)]
                for m in NUMBERS:
                    edges += [(s["prep", n], s["pdet", n, m], 0.5),
                              (s["pdet", n, m], s["padj", n, m], 0.3), (s["pdet", n, m], s["pnoun", n, m], 0.7),
                              (s["padj", n, m], s["pnoun", n, m], 1.0),
                              (s["pnoun", n, m], s["vi", n], 0.5), (s["pnoun", n, m], s["vt", n], 0.5),
                              (s["vt", n], s["odet", m], 0.5)]
            edges.append((s["adv"], None, 1.0))
            for m in NUMBERS:
                edges += [(s["odet", m], s["oadj", m], 0.3), (s["odet", m], s["onoun", m], 0.7),
                          (s["oadj", m], s["onoun", m], 1.0), (s["onoun", m], None, 1.0)]

        S, V = len(states), len(self.vocab)
        self.states = tuple(f"{c}:{name}" for c, name in states)
        self.topic_of_state = np.array([TOPICS.index(c) for c, _ in states])
        self.pi = np.zeros(S)  # P(first state)
        for k, p in start:
            self.pi[k] += p
        self.A = np.zeros((S, S))  # A[s, s'] = P(next state s' | s)
        self.f = np.zeros(S)  # f[s] = P(sentence ends after s)
        for a, b, p in edges:
            if b is None:
                self.f[a] += p
            else:
                self.A[a, b] += p
        self.B = np.zeros((S, V))  # B[s, v] = P(word v | state s)
        for k, emit in emissions.items():
            total = sum(emit.values())
            for w, p in emit.items():
                self.B[k, self.word_id[w]] = p / total
        assert np.allclose(self.A.sum(1) + self.f, 1.0) and np.allclose(self.B.sum(1), 1.0)
        assert np.isclose(self.pi.sum(), 1.0)
        self._pred = _neighbours(self.A.T)  # A has a few entries per row: multiply by gathering
        self._succ = _neighbours(self.A)

    # -- sampling ---------------------------------------------------------------------------

    def sample(self, n: int, seed: int) -> Sentences:
        """n sentences drawn from the grammar with numpy Generator(seed); same seed, same batch."""
        rng = np.random.default_rng(seed)
        S = len(self.states)
        move = _cdf(np.concatenate([self.A, self.f[:, None]], axis=1))  # column S = end
        emit = _cdf(self.B)
        state = _draw(_cdf(self.pi[None, :]), rng.random(n))
        topics = self.topic_of_state[state]
        words = np.full((n, MAX_WORDS), PAD, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        alive = np.ones(n, dtype=bool)
        for t in range(MAX_WORDS + 1):
            if not alive.any():
                break
            assert t < MAX_WORDS, "the grammar produced a sentence longer than MAX_WORDS"
            u_word, u_move = rng.random(n), rng.random(n)
            live = np.flatnonzero(alive)
            words[live, t] = _draw(emit[state[live]], u_word[live])
            lengths[live] += 1
            state[live] = _draw(move[state[live]], u_move[live])
            alive[live] = state[live] < S
        T = int(lengths.max())
        ids = np.full((n, T + 2), PAD, dtype=np.int64)
        ids[:, 0] = BOS
        ids[:, 1:T + 1] = words[:, :T]
        ids[np.arange(n), lengths + 1] = EOS
        return Sentences(torch.from_numpy(ids), torch.from_numpy(lengths), torch.from_numpy(topics))

    def text(self, batch: Sentences, n: int) -> str:
        """Sentence n of a batch as words."""
        return " ".join(self.vocab[i] for i in batch.ids[n, 1:1 + int(batch.lengths[n])].tolist())

    # -- exact inference (forward-backward over the states, float64) -----------------------

    def _forward_backward(self, batch: Sentences) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """prior[N,T,S] ∝ P(s_t | w_<t), beta[N,T,S] ∝ P(w_>t, end | s_t), log P(sentence)[N]."""
        w = batch.words().numpy()
        lengths = batch.lengths.numpy()
        N, T = w.shape
        S = len(self.states)
        prior = np.zeros((N, T, S))
        beta = np.zeros((N, T, S))
        logp = np.zeros(N)
        p = np.broadcast_to(self.pi, (N, S)).copy()
        final = np.zeros((N, S))
        for t in range(T):
            live = t < lengths
            prior[:, t] = p
            a = p * self.B[:, w[:, t]].T  # P(s_t, w_t | w_<t)
            z = a.sum(1)
            logp[live] += np.log(z[live])
            a /= np.where(z > 0, z, 1.0)[:, None]
            final[lengths == t + 1] = a[lengths == t + 1]
            p = _sparse_matmul(a, self._pred)  # a @ A
        logp += np.log(np.einsum("ns,s->n", final, self.f))
        b = np.broadcast_to(self.f, (N, S)).copy()
        for t in range(T - 1, -1, -1):
            b = np.where((t == lengths - 1)[:, None], self.f, b)
            beta[:, t] = b
            b = _sparse_matmul(self.B[:, w[:, t]].T * b, self._succ)  # (B[:, w_t] * b) @ A.T
            b /= np.maximum(b.sum(1, keepdims=True), 1e-300)
        return prior, beta, logp

    def log_prob(self, batch: Sentences) -> torch.Tensor:
        """[N] ln P(sentence) under the grammar (float64)."""
        return torch.from_numpy(self._forward_backward(batch)[2])

    def blank_posteriors(self, batch: Sentences) -> torch.Tensor:
        """[N, T_max, V] P(w_t = v | every other word of the sentence) (zero rows past its end)."""
        prior, beta, _ = self._forward_backward(batch)
        g = prior * beta  # ∝ P(s_t = s | w_<t, w_>t): the state at the blank, without its own word
        post = g @ self.B
        live = (np.arange(g.shape[1])[None, :] < batch.lengths.numpy()[:, None])
        post /= np.where(live, post.sum(-1), 1.0)[..., None]
        return torch.from_numpy(post * live[..., None])

    def blank_nll(self, batch: Sentences) -> torch.Tensor:
        """[N, T_max] -ln P(w_t | rest) at every word of every sentence (0 past its end)."""
        post = self.blank_posteriors(batch)
        w = batch.words()
        nll = -torch.log(post.gather(-1, w[..., None]).squeeze(-1).clamp_min(1e-300))
        return nll * (w != PAD)

    def blank_optimum(self, batch: Sentences) -> float:
        """The Bayes-optimal blank cross-entropy on `batch`: mean over sentences of the mean over t of -ln P(w_t | rest)."""
        return float((self.blank_nll(batch).sum(1) / batch.lengths).mean())

    def topic_posteriors(self, batch: Sentences) -> torch.Tensor:
        """[N, len(TOPICS)] P(topic | sentence)."""
        prior, _, _ = self._forward_backward(batch)
        w = batch.words().numpy()
        n = np.arange(len(w))
        last = batch.lengths.numpy() - 1
        joint = prior[n, last] * self.B[:, w[n, last]].T * self.f  # ∝ P(s_T, w, end)
        by_topic = np.stack([joint[:, self.topic_of_state == c].sum(1) for c in range(len(TOPICS))], 1)
        return torch.from_numpy(by_topic / by_topic.sum(1, keepdims=True))

    def bayes_accuracy(self, batch: Sentences) -> float:
        """The expected accuracy of the Bayes classifier of the topic, E[max_c P(c | sentence)], on `batch`."""
        return float(self.topic_posteriors(batch).max(1).values.mean())

    def brute_force_prob(self, words: list[int], topic: int | None = None) -> float:
        """P(w_1..w_T [, topic]) by summing over every state path (exponential: tiny sentences only, for tests)."""
        allowed = [np.flatnonzero(self.B[:, w] > 0) for w in words]
        if topic is not None:
            allowed[0] = allowed[0][self.topic_of_state[allowed[0]] == topic]
        total = 0.0
        for path in itertools.product(*allowed):
            p = self.pi[path[0]] * self.B[path[0], words[0]]
            for prev, s, w in zip(path, path[1:], words[1:]):
                p *= self.A[prev, s] * self.B[s, w]
            total += p * self.f[path[-1]]
        return total


def _neighbours(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For sparse M[S, S']: (index[S, k], weight[S, k]) with M[s, index[s, j]] = weight[s, j], zero-padded."""
    k = int((M > 0).sum(1).max())
    index = np.zeros((M.shape[0], k), dtype=np.int64)
    weight = np.zeros((M.shape[0], k))
    for s in range(M.shape[0]):
        nz = np.flatnonzero(M[s])
        index[s, :len(nz)], weight[s, :len(nz)] = nz, M[s, nz]
    return index, weight


def _sparse_matmul(x: np.ndarray, neighbours: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """x[N, S] @ M for M given by `_neighbours(M.T)`: out[n, s'] = sum_j x[n, index[s', j]] weight[s', j]."""
    index, weight = neighbours
    return np.einsum("nsj,sj->ns", x[:, index], weight)


def _cdf(P: np.ndarray) -> np.ndarray:
    """Row-wise cumulative sums of P[N, K], exactly 1 from each row's last positive entry on."""
    cdf = np.cumsum(P, axis=1)
    last = P.shape[1] - 1 - np.argmax((P > 0)[:, ::-1], axis=1)
    cdf[np.arange(P.shape[1])[None, :] >= last[:, None]] = 1.0
    return cdf


def _draw(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: row n of cdf[N, K] with uniform u[n] in [0, 1) -> index k (never a zero-probability k)."""
    return (u[:, None] >= cdf).sum(1)


GRAMMAR = Grammar()


def sample(n: int, seed: int) -> Sentences:
    """n sentences of the book's grammar from `seed` (see `Grammar.sample`)."""
    return GRAMMAR.sample(n, seed)
