"""User-level DP-SGD (``accounting_mechanisms.dpsgd.user_*``): users Poisson-sampled with
all their records, through the existing subsampled Gaussian."""

from __future__ import annotations

import numpy as np
import pytest

from accounting.accountant import Accountant
from accounting_mechanisms.dpsgd import (
    dpsgd_ledger,
    user_dpsgd_ledger,
    user_level_mechanism,
    user_sensitivity,
)
from accounting_mechanisms.per_example import individual_epsilons

DELTA = 1e-5


def interval(ledger) -> tuple[float, float]:
    lo, hi = Accountant.of(ledger).epsilon_interval(DELTA)
    return float(lo), float(hi)


@pytest.mark.parametrize("clip", [0.5, 1.0, 3.0])
def test_one_record_per_user_is_example_level(clip: float) -> None:
    q, steps, z = 0.01, 500, 1.1
    user = user_dpsgd_ledger(q, steps, z * clip, record_clip=clip, records=1)
    assert interval(user) == interval(dpsgd_ledger(q, steps, z))
    same = user_dpsgd_ledger(q, steps, z * clip, user_clip=clip)
    assert interval(same) == interval(dpsgd_ledger(q, steps, z))


def test_k_records_without_user_clip_is_noise_multiplier_over_k() -> None:
    q, steps, z, k = 0.02, 300, 2.0, 4
    user = user_dpsgd_ledger(q, steps, z, record_clip=1.0, records=k)
    lo, hi = interval(user)
    ref_lo, ref_hi = interval(dpsgd_ledger(q, steps, z / k))
    assert lo == pytest.approx(ref_lo, rel=1e-12) and hi == pytest.approx(ref_hi, rel=1e-12)
    # clipping the user's sum to C_u = 2 < 4·1 helps, and only the smaller bound counts
    assert user_sensitivity(user_clip=2.0, record_clip=1.0, records=k) == 2.0
    clipped = interval(user_dpsgd_ledger(q, steps, z, user_clip=2.0, record_clip=1.0,
                                         records=k))
    assert clipped[1] < hi


def test_users_of_different_sizes_through_per_example_accounting() -> None:
    # three users with 1, 2 and 4 records of norm-C gradients, no user clip, noise std
    # 4C: sensitivities k·C ≤ 4C, i.e. 1/4, 1/2, 1 of the largest
    q, steps = 0.05, 200
    sens = np.tile(np.array([1.0, 2.0, 4.0]), (steps, 1))
    r = individual_epsilons(sens, clip=4.0, q=q, sigma=1.0, delta=DELTA, pld=True)
    hi = r.epsilon()
    for j, k in enumerate((1, 2, 4)):
        ref = interval(user_dpsgd_ledger(q, steps, 4.0, record_clip=1.0, records=k))[1]
        assert hi[j] == pytest.approx(ref, rel=1e-9)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="give user_clip"):
        user_sensitivity()
    with pytest.raises(ValueError, match="together"):
        user_sensitivity(record_clip=1.0)
    with pytest.raises(ValueError, match="records"):
        user_sensitivity(record_clip=1.0, records=0)
    with pytest.raises(ValueError, match="noise_std"):
        user_level_mechanism(0.1, 0.0, user_clip=1.0)
    with pytest.raises(ValueError, match="q"):
        user_level_mechanism(1.5, 1.0, user_clip=1.0)
