"""Hypothesis strategies shared by the tests."""

import numpy as np
from hypothesis import strategies as st


@st.composite
def finite_pairs(draw):
    n = draw(st.integers(2, 5))
    p = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n)))
    q = np.array(draw(st.lists(st.floats(0.05, 1.0), min_size=n, max_size=n)))
    return p / p.sum(), q / q.sum()
