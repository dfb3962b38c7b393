"""Permute-and-flip (McKenna, Sheldon, arXiv:2010.12603), accounted by its tight
dominating pair: the Laplace pair with Δ/b = ε.

The mechanism visits the candidates in a uniformly random order and stops at
candidate r with probability exp(ε(u(x, r) − u*(x))/(2Δu)), u* the best utility; it
is ε-DP (ibid., Thm 1) and equals report-noisy-max with exponential noise (Ding et
al., arXiv:2105.07260): Y = argmax_r (a_r + E_r), a_r = εu(x, r)/(2Δu), E_r iid
Exp(1).

**Dominating pair** (derived here). Let F be the standard Laplace CDF and
Λ = F⁻¹ (Λ(p) = log 2p for p ≤ ½, −log 2(1 − p) above). The Laplace pair
(Lap(0, 1), Lap(ε, 1)) has the monotone likelihood ratio, so its optimal tests are
half-lines and the lower boundary of its set of (P(A), Q(A)) is q = F(Λ(p) − ε),
convex. Hence a pair (P, Q) is a post-processing of it (Blackwell; its trade-off
function lies above the Laplace one) iff |Λ(P(S)) − Λ(Q(S))| ≤ ε for every event S
(randomised tests are mixtures, and the boundary is convex). For permute-and-flip:

1. neighbours move each a_r by at most ε/2; adding ε/2 to all (which changes no
   output law) makes a′ = a + s with s ∈ [0, ε]ⁿ;
2. for a set S of candidates, P_a(S) rises with a_r for r ∈ S and falls with a_r for
   r ∉ S (raise one noisy score: the argmax moves only to it), so P_{a′}(S) lies
   between P_{a − ε1_S}(S) and P_{a + ε1_S}(S) (shift invariance for the first);
3. P_{a + τ1_S}(S) = P(D < τ) =: G(τ) with D = W − X, W = max_{r∉S}(a_r + E_r) and
   X = max_{r∈S}(a_r + E_r) independent. A max of independent shifted Exp(1) has
   hazard rate ≤ 1: its density Σ_i f_i ∏_{j≠i} F_j is at most
   Σ_i S_i ∏_{j≠i} F_j = P(exactly one exceeds) ≤ P(some exceeds) (each f_i ≤ S_i).
   So G′(τ) = E f_W(τ + X) ≤ E S_W(τ + X) = 1 − G(τ) and, the same way through X,
   G′(τ) ≤ G(τ): dΛ(G(τ))/dτ = G′/min(G, 1 − G) ≤ 1;
4. so Λ(P_{a′}(S)) is within ε of Λ(P_a(S)) for every S: every instance is dominated
   by the Laplace pair with Δ/b = ε, in both directions.

It is tight: two candidates give P(Y = 1) = F(a_1 − a_2), a Laplace threshold test,
and the gap a_1 − a_2 = −(ε′ + ε)/2 moved by ε attains the Laplace pair's
δ(ε′) = 1 − e^{(ε′−ε)/2} (its optimal half-line), so the profile is the exact worst
case of one use over all utility vectors and candidate sets; the tests check both
ends by exact enumeration of the output law over permutations. The Rényi curve
of the pair is an upper bound on every instance's (data processing), and k uses
compose as the pair (sound under adaptive composition; Zhu, Dong, Wang,
arXiv:2106.08567). Against the ε-DP pair (randomized response) accounted before,
δ(0) is 1 − e^{−ε/2} against tanh(ε/2).

It is *not* ε-BR: two candidates with gap 0 under x and 2Δu under x′ have losses ε and
−log(2 − e^{−ε}) (range ε + log(2 − e^{−ε}) > ε), so the bounded-range composition of
Dong, Durfee, Rogers does not apply at parameter ε.
"""

from __future__ import annotations

import attrs

from accounting.pairs.mechanism import Mechanism, Range, parameter
from accounting.pairs.pair import Pair, identical_pair
from accounting.registry.hookspecs import RegisterMechanism, hookimpl

from .approx_dp import EPSILON, one_sensitivity
from .laplace import LaplacePair

__all__ = ["PermuteAndFlip", "PermuteAndFlipPair"]


@attrs.frozen
class PermuteAndFlipPair(LaplacePair):
    """The tight dominating pair of permute-and-flip with parameter ε: the Laplace pair
    with Δ/b = e = ε (module docstring)."""

    def describe(self) -> str:
        return f"permute-and-flip(ε={self.e:g}) as Laplace(Δ/b={self.e:g})"


@attrs.frozen
class PermuteAndFlip(Mechanism):
    """Permute-and-flip with parameter ``epsilon`` ∈ [0, 1e8] (coin probabilities
    exp(ε(u − u*)/(2Δu))): accounted by its tight dominating pair, the Laplace pair with
    Δ/b = ε (module docstring; ε = 0 picks uniformly: no privacy cost).
    ``sensitivity`` is not used (it must be 1); neighbouring: the relation Δu is
    taken over."""

    name = "permute_and_flip"
    sensitivity: float = attrs.field(default=1.0, kw_only=True, validator=one_sensitivity,
                                     metadata={"range": Range(1.0, 1.0)})
    epsilon: float = parameter(EPSILON)

    def pair(self) -> Pair:
        if self.epsilon == 0:
            return identical_pair("permute-and-flip (ε = 0: no privacy loss)")
        return PermuteAndFlipPair(float(self.epsilon))


@hookimpl
def accounting_register_mechanisms(register: RegisterMechanism) -> None:
    register(PermuteAndFlip)
