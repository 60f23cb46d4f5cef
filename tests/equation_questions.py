"""Reference equation questions for the seeds' derivations, ready to lift into `autograder/checks/chN.py`.

Each question: the tensors given (sizes axis by axis), the tensors the answer defines (in order),
the reference equations (in a chapter they live in `solutions/chN.py`), and draws of sizes in
which every size differs from the others. The names follow `front/notation.md`.
"""
from __future__ import annotations

from autograder.checks.base import EquationQuestion

# 000 P2a / 002 P5a: self-attention with the position t replaced by grid coordinates (x, y).
SPATIAL_EQUATIONS = r"""
Query[h,x,y,k] = sum_j WQ[h,k,j] * M[x,y,j]
Key[h,x,y,k]   = sum_j WK[h,k,j] * M[x,y,j]
Value[h,x,y,i] = sum_j WV[h,i,j] * M[x,y,j]
alpha[h,x,y,x2,y2] = softmax_{x2,y2} (sum_k Query[h,x,y,k] * Key[h,x2,y2,k]) / sqrt(K)
V[h,x,y,i] = sum_{x2,y2} alpha[h,x,y,x2,y2] * Value[h,x2,y2,i]
"""
SPATIAL = EquationQuestion(
    inputs={"WQ": "H,K,J", "WK": "H,K,J", "WV": "H,I,J", "M": "X,Y,J"},
    defines={"Query": "H,X,Y,K", "Key": "H,X,Y,K", "Value": "H,X,Y,I", "alpha": "H,X,Y,X,Y", "V": "H,X,Y,I"},
    reference=SPATIAL_EQUATIONS,
    sizes=({"H": 2, "K": 3, "I": 4, "J": 5, "X": 6, "Y": 7}, {"H": 3, "K": 5, "I": 2, "J": 4, "X": 7, "Y": 6}),
)

# 002 P6a: the merged query-key matrix, head index first, with the scale folded in.
WQ_TILDE_EQUATION = "WQ_tilde[h,j1,j2] = sum_k WQ[h,k,j1] * WK[h,k,j2] / sqrt(K)"
WQ_TILDE = EquationQuestion(
    inputs={"WQ": "H,K,J", "WK": "H,K,J"},
    defines={"WQ_tilde": "H,J,J"},
    reference=WQ_TILDE_EQUATION,
    sizes=({"H": 2, "K": 3, "J": 5}, {"H": 3, "K": 4, "J": 2}),
    operands=("WQ", "WK"),  # an einsum spec over (WQ, WK) is accepted: "hka,hkb->hab / sqrt(K)"
)

# 002 P2 (one decoding step): attention of the decoder state z over image features M[x,y,k].
CAPTION_EQUATIONS = r"""
alpha[x,y] = softmax_{x,y} sum_{j,k} z[j] * W_att[j,k] * M[x,y,k]
V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
"""
CAPTION = EquationQuestion(
    inputs={"z": "J", "W_att": "J,K", "M": "X,Y,K"},
    defines={"alpha": "X,Y", "V": "K"},
    reference=CAPTION_EQUATIONS,
    sizes=({"J": 5, "K": 3, "X": 4, "Y": 6}, {"J": 3, "K": 6, "X": 5, "Y": 2}),
)

# 002 P2, all four lines for one decoding step: the word distribution, the attention, the glimpse, and the
# recurrent cell (declared by the sizes of its vectors: the answer says which vectors CELL reads, in order).
# z is the previous state z_{t-1}, e = E[w_t, :] the vector of the word just read.
CAPTION_STEP_EQUATIONS = r"""
P[w] = softmax_w sum_{u,j} E[w,u] * W_auto[u,j] * z[j]
alpha[x,y] = softmax_{x,y} sum_{j,k} z[j] * W_att[j,k] * M[x,y,k]
V[k] = sum_{x,y} alpha[x,y] * M[x,y,k]
z_next[:] = CELL(z[:], V[:], e[:])
"""
CAPTION_STEP = EquationQuestion(
    inputs={"z": "J", "W_auto": "U,J", "E": "Vocab,U", "W_att": "J,K", "M": "X,Y,K", "e": "U"},
    defines={"P": "Vocab", "alpha": "X,Y", "V": "K", "z_next": "J"},
    reference=CAPTION_STEP_EQUATIONS,
    functions={"CELL": "J,K,U -> J"},
    sizes=({"J": 5, "U": 3, "Vocab": 7, "K": 4, "X": 2, "Y": 6}, {"J": 4, "U": 6, "Vocab": 5, "K": 3, "X": 7, "Y": 2}),
)

# 002 P3a: layer 0 of the language CNN, the word vectors of the sentence (a gather through w).
CNN_LAYER0_EQUATION = "M0[b,t,j] = E[w[b,t], j]"
CNN_LAYER0 = EquationQuestion(
    inputs={"w": "B,T in V", "E": "V,J"},
    defines={"M0": "B,T,J"},
    reference=CNN_LAYER0_EQUATION,
    sizes=({"B": 2, "T": 5, "V": 7, "J": 3}, {"B": 3, "T": 4, "V": 6, "J": 5}),
)

# 002 P3b: a stride-2 convolution layer, valid positions only (T2 = (T - D)//2 + 1), batch index kept.
CNN_STRIDE2_EQUATION = "M1[b,t,j2] = sigmoid(sum_{d,j} W[d,j,j2] * M0[b, 2*t + d, j] - beta[j2])"
CNN_STRIDE2 = EquationQuestion(
    inputs={"M0": "B,T,J", "W": "D,J,J2", "beta": "J2"},
    defines={"M1": "B,T2,J2"},
    reference=CNN_STRIDE2_EQUATION,
    sizes=({"B": 2, "T": 13, "D": 3, "J": 4, "J2": 5, "T2": 6},
           {"B": 3, "T": 10, "D": 2, "J": 6, "J2": 4, "T2": 5},
           {"B": 2, "T": 12, "D": 4, "J": 3, "J2": 6, "T2": 5}),
)

QUESTIONS = {"spatial": SPATIAL, "wq_tilde": WQ_TILDE, "caption": CAPTION, "caption_step": CAPTION_STEP,
             "cnn_layer0": CNN_LAYER0,
             "cnn_stride2": CNN_STRIDE2}
